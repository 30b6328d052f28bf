"""One real probe: TCP to the proxy (and TLS to it, for an https proxy), a tunnel to the
target in the proxy's protocol with its credentials (HTTP CONNECT or SOCKS5: tunnel.py), TLS
to the target inside the tunnel, one GET. Bounded by a timeout; the socket is always
closed."""

from __future__ import annotations

import asyncio
import functools
import ssl
import time
from dataclasses import dataclass

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.domain import egress
from proxyfleet.common.wire.models import ProbeResult, Proxy, Scheme
from proxyfleet.health import probe, tunnel
from proxyfleet.health.conn import ProbeConnection
from proxyfleet.health.probe import FailureKind, ProbeFailure, Target
from proxyfleet.health.tls import ProbeTlsContext, make_ssl_context

__all__ = ["ERROR", "OK", "Outcome", "Prober", "make_ssl_context"]

OK = "ok"
ERROR = "error"
"""Metric label of a probe that crashed (a bug, not a proxy failure)."""
MISSING, INVALID = "missing", "invalid"
"""Why a good probe has no exit address: the answer carried none, or not an IP address."""

# A fleet reports a few thousand distinct addresses: each is parsed once.
_normalize = functools.lru_cache(maxsize=8192)(egress.normalize)


@dataclass(frozen=True, slots=True)
class Outcome:
    """A probe's result, and its metric label: "ok" or a FailureKind."""

    result: ProbeResult
    kind: str
    egress_unknown: str = ""
    """A good probe without a usable exit address: MISSING or INVALID; else ""."""


class Prober:
    """Probes proxies against one target; everything per target is built once here."""

    def __init__(
        self,
        target: Target,
        *,
        timeout: float,
        clock: Clock,
        ssl_context: ssl.SSLContext | None = None,
        proxy_ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        """`ssl_context` verifies the target (an https one); `proxy_ssl_context` verifies
        https proxies (default: the system's CAs, loaded when one is first probed)."""
        self._target = target
        self._resolver = tunnel.TargetResolver(target.host, target.port)
        self._proxy_ssl = proxy_ssl_context
        self._timeout = timeout
        self._clock = clock
        self._ssl = (ssl_context or make_ssl_context()) if target.tls else None
        self._resuming = self._ssl if isinstance(self._ssl, ProbeTlsContext) else None
        self._get = probe.get_request(target)

    async def probe(self, proxy: Proxy) -> Outcome:
        """Probe one proxy; never raises for a failure of the proxy or the target."""
        started_at = self._clock.now()
        start = time.perf_counter()  # not loop.time(): uvloop's has millisecond steps
        conn = ProbeConnection()
        try:
            async with asyncio.timeout(self._timeout):
                raw = await self._exchange(proxy, conn)
            ip = _normalize(raw) if raw else ""
            seconds = time.perf_counter() - start
            unknown = "" if ip else (INVALID if raw else MISSING)
            return _outcome(proxy, started_at, seconds, OK, egress_ip=ip, egress_unknown=unknown)
        except ProbeFailure as exc:
            return _outcome(proxy, started_at, time.perf_counter() - start, exc.kind, str(exc))
        except TimeoutError:
            message = f"timed out after {self._timeout:g}s {conn.stage}"
            seconds = time.perf_counter() - start
            return _outcome(proxy, started_at, seconds, FailureKind.TIMEOUT, message)
        finally:
            conn.close()

    def _proxy_tls(self) -> ssl.SSLContext:
        if self._proxy_ssl is None:
            self._proxy_ssl = make_ssl_context()
        return self._proxy_ssl

    async def _exchange(self, proxy: Proxy, conn: ProbeConnection) -> str:
        """Tunnel, TLS, GET; returns the egress IP as reported ("" when not)."""
        if not proxy.host or not proxy.port:
            raise ProbeFailure(FailureKind.UNREACHABLE, "proxy has no address yet")
        scheme = proxy.scheme
        host = self._target.host  # socks5h: the proxy resolves it
        if scheme == Scheme.SOCKS5:  # resolved here, first
            host = await self._resolver.address(conn)
        await conn.connect(proxy.host, proxy.port)
        if scheme == Scheme.HTTP:
            await tunnel.http_connect(conn, self._target, proxy)
        elif scheme == Scheme.HTTPS:
            await conn.start_tls(self._proxy_tls(), proxy.host, "proxy")
            await tunnel.http_connect(conn, self._target, proxy)
        else:
            await tunnel.socks5_connect(conn, self._target, host, proxy)
        if self._ssl is not None:
            await conn.start_tls(self._ssl, self._target.host)
        conn.stage = "waiting for the target's reply"
        conn.write(self._get)
        head = probe.parse_response_head(await conn.read_head("target"), "target")
        probe.check_target(head)
        if self._resuming is not None and (tls := conn.ssl_object) is not None:
            self._resuming.remember(tls)
        if not probe.wants_body(head):
            return ""
        return probe.egress_ip(await conn.read_body(head))


def _outcome(
    proxy: Proxy,
    started_at: float,
    seconds: float,
    kind: str,
    error: str = "",
    egress_ip: str = "",
    egress_unknown: str = "",
) -> Outcome:
    result = ProbeResult(
        proxy_id=proxy.id,
        time=started_at,
        ok=kind == OK,
        latency_ms=round(seconds * 1000, 3),
        error=error,
        egress_ip=egress_ip,
    )
    return Outcome(result, kind, egress_unknown)
