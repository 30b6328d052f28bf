"""Probes through SOCKS5 proxies that misbehave or refuse, played by a scripted server in
this process (real SOCKS5 upstreams: test_upstream_probes.py): what the prober sends, and
the failure each answer gives, on both event loops."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import pytest
from tests.conftest import TargetServer

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.domain import socks5
from proxyfleet.common.wire.models import Phase, Proxy, Scheme
from proxyfleet.health import loops
from proxyfleet.health.conn import ProbeConnection
from proxyfleet.health.probe import FailureKind, ProbeFailure, parse_target
from proxyfleet.health.prober import Outcome, Prober
from proxyfleet.health.tunnel import RESOLVE_FOR, TargetResolver

USER, PASSWORD = "vendor-user-7", "pa:ss@wörd"

Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter, "Seen"], Awaitable[None]]


@dataclass
class Seen:
    """What the fake server read from the prober."""

    greeting: bytes = b""
    auth: bytes = b""
    connect: bytes = b""
    steps: list[str] = field(default_factory=list)


def _proxy(port: int, scheme: Scheme, username: str = USER, password: str = PASSWORD) -> Proxy:
    now = time.time()
    return Proxy(
        id="psocks",
        provider="static",
        zone="z1",
        phase=Phase.READY,
        gen=1,
        username=username,
        password=password,
        created_at=now,
        updated_at=now,
        host="127.0.0.1",
        port=port,
        scheme=scheme,
    )


async def _read_greeting(reader: asyncio.StreamReader, seen: Seen) -> None:
    head = await reader.readexactly(2)
    seen.greeting = head + await reader.readexactly(head[1])


async def _read_auth(reader: asyncio.StreamReader, seen: Seen) -> None:
    ver, ulen = await reader.readexactly(2)
    user = await reader.readexactly(ulen)
    (plen,) = await reader.readexactly(1)
    seen.auth = bytes([ver, ulen]) + user + bytes([plen]) + await reader.readexactly(plen)


async def _read_connect(reader: asyncio.StreamReader, seen: Seen) -> None:
    head = await reader.readexactly(4)
    atyp = head[3]
    if atyp == socks5.ATYP_IPV4:
        rest = await reader.readexactly(4 + 2)
    elif atyp == socks5.ATYP_IPV6:
        rest = await reader.readexactly(16 + 2)
    else:
        (n,) = await reader.readexactly(1)
        rest = bytes([n]) + await reader.readexactly(n + 2)
    seen.connect = head + rest


def _reply(code: int) -> bytes:
    return bytes([5, code, 0, socks5.ATYP_IPV4, 127, 0, 0, 1]) + struct.pack("!H", 1080)


async def _probe(
    script: Script, scheme: Scheme, target_url: str, **kw: str
) -> tuple[Outcome, Seen]:
    seen = Seen()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await script(reader, writer, seen)
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            seen.steps.append("client left")
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = int(server.sockets[0].getsockname()[1])
    try:
        prober = Prober(parse_target(target_url), timeout=1.0, clock=SystemClock())
        return await prober.probe(_proxy(port, scheme, **kw)), seen
    finally:
        server.close()
        await server.wait_closed()


async def _refuses_auth(r: asyncio.StreamReader, w: asyncio.StreamWriter, seen: Seen) -> None:
    await _read_greeting(r, seen)
    w.write(bytes([5, socks5.USER_PASS]))
    await _read_auth(r, seen)
    w.write(bytes([1, 1]))


async def _no_method(r: asyncio.StreamReader, w: asyncio.StreamWriter, seen: Seen) -> None:
    await _read_greeting(r, seen)
    w.write(bytes([5, socks5.NO_ACCEPTABLE]))


async def _speaks_http(r: asyncio.StreamReader, w: asyncio.StreamWriter, seen: Seen) -> None:
    await _read_greeting(r, seen)
    w.write(b"HTTP/1.1 400 Bad Request\r\n\r\n")


async def _closes(r: asyncio.StreamReader, w: asyncio.StreamWriter, seen: Seen) -> None:
    await _read_greeting(r, seen)


def _refuses_connect(code: int) -> Script:
    async def script(r: asyncio.StreamReader, w: asyncio.StreamWriter, seen: Seen) -> None:
        await _read_greeting(r, seen)
        w.write(bytes([5, socks5.USER_PASS]))
        await _read_auth(r, seen)
        w.write(bytes([1, 0]))
        await _read_connect(r, seen)
        w.write(_reply(code))

    return script


@pytest.mark.parametrize("loop", loops.LOOPS)
@pytest.mark.parametrize(
    ("script", "kind", "error"),
    [
        (
            _refuses_auth,
            FailureKind.AUTH,
            "proxy rejected credentials (SOCKS5: the server refused the username/password)",
        ),
        (
            _no_method,
            FailureKind.AUTH,
            "proxy rejected credentials (SOCKS5: the server accepts none of our auth methods",
        ),
        (_speaks_http, FailureKind.PROXY, "SOCKS5 proxy: not a SOCKS5 server"),
        (_closes, FailureKind.PROXY, "proxy closed the connection before answering"),
        (
            _refuses_connect(socks5.Reply.CONNECTION_REFUSED),
            FailureKind.PROXY,
            "proxy refused CONNECT: connection refused (SOCKS5 reply 5)",
        ),
        (_refuses_connect(0x42), FailureKind.PROXY, "SOCKS5 proxy: CONNECT refused with unknown"),
    ],
)
def test_refusals_and_protocol_errors_fail_with_a_reason(
    loop: str, script: Script, kind: str, error: str, target: TargetServer
) -> None:
    outcome, _ = loops.run(_probe(script, Scheme.SOCKS5, target.url), loop)
    assert (outcome.kind, outcome.result.error[: len(error)]) == (kind, error)
    assert PASSWORD not in outcome.result.error
    assert not outcome.result.ok


async def test_credentials_go_as_rfc1929(target: TargetServer) -> None:
    _, seen = await _probe(_refuses_connect(1), Scheme.SOCKS5, target.url)
    assert seen.greeting == bytes([5, 1, socks5.USER_PASS])
    user, secret = USER.encode(), PASSWORD.encode()
    assert seen.auth == bytes([1, len(user)]) + user + bytes([len(secret)]) + secret


async def test_no_credentials_offer_no_auth(target: TargetServer) -> None:
    outcome, seen = await _probe(_no_method, Scheme.SOCKS5, target.url, username="", password="")
    assert seen.greeting == bytes([5, 1, socks5.NO_AUTH])
    assert outcome.kind == FailureKind.AUTH


async def test_credentials_socks5_cannot_carry_fail_before_sending_them(
    target: TargetServer,
) -> None:
    outcome, seen = await _probe(_refuses_auth, Scheme.SOCKS5, target.url, password="x" * 256)
    assert outcome.kind == FailureKind.AUTH
    assert outcome.result.error == (
        "credentials unusable with SOCKS5 (each must be 1 to 255 bytes)"
    )
    assert seen.auth == b""


@pytest.mark.parametrize(
    ("scheme", "expected_atyp"),
    [
        (Scheme.SOCKS5, (socks5.ATYP_IPV4, socks5.ATYP_IPV6)),
        (Scheme.SOCKS5H, (socks5.ATYP_DOMAIN,)),
    ],
)
async def test_socks5_resolves_the_target_and_socks5h_leaves_it_to_the_proxy(
    scheme: Scheme, expected_atyp: tuple[int, ...], target: TargetServer
) -> None:
    url = target.url.replace("127.0.0.1", "localhost")
    _, seen = await _probe(_refuses_connect(1), scheme, url)
    assert seen.connect[3] in expected_atyp
    assert struct.unpack("!H", seen.connect[-2:]) == (target.port,)
    if scheme == Scheme.SOCKS5H:
        assert seen.connect[4:-2] == bytes([len("localhost")]) + b"localhost"


async def test_an_address_target_goes_as_an_address_either_way(target: TargetServer) -> None:
    for scheme in (Scheme.SOCKS5, Scheme.SOCKS5H):
        _, seen = await _probe(_refuses_connect(1), scheme, target.url)
        assert seen.connect[3:8] == bytes([socks5.ATYP_IPV4, 127, 0, 0, 1])


def test_an_unresolvable_target_is_the_targets_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_such_name(*_: object, **__: object) -> list[object]:  # no DNS query leaves
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_name)  # asyncio's loop calls it
    url = "https://target.example/"
    outcome, seen = loops.run(_probe(_refuses_connect(1), Scheme.SOCKS5, url), "asyncio")
    assert outcome.kind == FailureKind.TARGET
    assert outcome.result.error == (
        "cannot resolve the target target.example: Name or service not known"
    )
    assert seen.greeting == b""  # resolved before the proxy was asked anything


async def test_a_silent_socks5_proxy_times_out_naming_the_step(target: TargetServer) -> None:
    async def silent(r: asyncio.StreamReader, w: asyncio.StreamWriter, seen: Seen) -> None:
        await _read_greeting(r, seen)
        await r.read()  # holds the connection until the prober gives up

    outcome, _ = await _probe(silent, Scheme.SOCKS5, target.url)
    assert outcome.kind == FailureKind.TIMEOUT
    assert outcome.result.error == "timed out after 1s waiting for the proxy's SOCKS5 method choice"


def test_the_target_is_resolved_once_per_period_by_one_lookup(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    answers: list[str | None] = ["192.0.2.7", None, "192.0.2.8"]  # None: no such name

    def lookup(host: str, *_: object, **__: object) -> list[object]:
        calls.append(host)
        answer = answers[len(calls) - 1]
        if answer is None:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answer, 443))]

    monkeypatch.setattr(socket, "getaddrinfo", lookup)  # asyncio's loop calls it
    clock = [100.0]
    resolver = TargetResolver("target.example", 443, now=lambda: clock[0])

    async def run() -> list[str]:
        conn = ProbeConnection()
        together = await asyncio.gather(*(resolver.address(conn) for _ in range(5)))
        clock[0] += RESOLVE_FOR - 1
        still = await resolver.address(conn)
        clock[0] += 1  # expired: looked up again, and that lookup fails
        with pytest.raises(ProbeFailure, match=r"cannot resolve the target target\.example"):
            await resolver.address(conn)
        again = await resolver.address(conn)  # a failure is not kept
        return [*together, still, again]

    got = loops.run(run(), "asyncio")
    assert got == ["192.0.2.7"] * 6 + ["192.0.2.8"]
    assert calls == ["target.example"] * 3


async def test_an_address_target_is_never_looked_up() -> None:
    resolver = TargetResolver("::1", 443, now=lambda: 0.0)
    assert await resolver.address(ProbeConnection()) == "::1"
