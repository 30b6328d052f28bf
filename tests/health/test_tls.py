"""TLS session resumption across probes: real probes through a real Squid to the target."""

from __future__ import annotations

import ssl
import time

import pytest
from tests.conftest import TargetServer
from tests.health.conftest import PASSWORD, USER, ProxyProcess

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.wire.models import Phase, Proxy
from proxyfleet.health import loops
from proxyfleet.health.probe import parse_target
from proxyfleet.health.prober import OK, Prober
from proxyfleet.health.settings import HealthSettings
from proxyfleet.health.tls import ProbeTlsContext, make_ssl_context


class SpyContext(ProbeTlsContext):
    """Records, for every finished probe, whether its handshake resumed a session."""

    resumed: list[bool]

    def remember(self, tls: ssl.SSLObject) -> None:
        self.resumed.append(tls.session_reused)
        super().remember(tls)


class FakeNow:
    def __init__(self) -> None:
        self.value = 1000.0

    def __call__(self) -> float:
        return self.value


def _context(ca_file: str, resume_for: float, now: FakeNow) -> SpyContext:
    ctx = SpyContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cafile=ca_file)
    ctx.configure(resume_for, now)
    ctx.resumed = []
    return ctx


def _proxy(port: int) -> Proxy:
    now = time.time()
    return Proxy(
        id="ptls",
        provider="local",
        zone="z1",
        phase=Phase.READY,
        gen=1,
        username=USER,
        password=PASSWORD,
        created_at=now,
        updated_at=now,
        host="127.0.0.1",
        port=port,
    )


async def _probe_n(target: TargetServer, ctx: ssl.SSLContext, port: int, n: int) -> list[str]:
    prober = Prober(parse_target(target.url), timeout=2, clock=SystemClock(), ssl_context=ctx)
    return [(await prober.probe(_proxy(port))).kind for _ in range(n)]


@pytest.mark.parametrize("loop", loops.LOOPS)
def test_later_probes_resume_the_session_of_a_full_handshake(
    loop: str, squid: ProxyProcess, target: TargetServer
) -> None:
    now = FakeNow()
    ctx = _context(target.ca_file, 60.0, now)
    assert loops.run(_probe_n(target, ctx, squid.port, 3), loop) == [OK, OK, OK]
    assert ctx.resumed == [False, True, True]
    assert ctx.session is not None


def test_a_session_is_resumed_for_resume_for_seconds_only(
    squid: ProxyProcess, target: TargetServer
) -> None:
    now = FakeNow()
    ctx = _context(target.ca_file, 60.0, now)
    loops.run(_probe_n(target, ctx, squid.port, 2))
    now.value += 60.0  # the full handshake is now a minute old: verify the target again
    assert ctx.session is None
    loops.run(_probe_n(target, ctx, squid.port, 2))
    assert ctx.resumed == [False, True, False, True]


def test_zero_means_a_full_handshake_on_every_probe(
    squid: ProxyProcess, target: TargetServer
) -> None:
    ctx = _context(target.ca_file, 0.0, FakeNow())
    assert loops.run(_probe_n(target, ctx, squid.port, 3)) == [OK, OK, OK]
    assert ctx.resumed == [False, False, False]
    assert ctx.session is None


def test_make_ssl_context_verifies_and_rejects_a_missing_ca() -> None:
    ctx = make_ssl_context(resume_for=5.0)
    assert ctx.verify_mode is ssl.CERT_REQUIRED
    assert ctx.check_hostname
    assert ctx.resume_for == 5.0
    with pytest.raises(ConfigError, match="cannot load CA certificates"):
        make_ssl_context("/nonexistent/ca.pem")


def test_resume_for_must_not_be_negative() -> None:
    assert HealthSettings().tls_resume_for == 60.0
    with pytest.raises(ConfigError, match="--tls-resume-for: expected seconds >= 0, got -1"):
        HealthSettings(tls_resume_for=-1)
