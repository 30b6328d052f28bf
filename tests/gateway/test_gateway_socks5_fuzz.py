"""A bounded fuzz of SOCKS5 handshakes: each bad one is answered as RFC 1928/1929 say (a
method choice, an auth status, a reply code) or just closed, within the handshake timeout;
nothing is logged at error level, no credential reaches a log, the gateway keeps serving
and a tunnel open meanwhile is unaffected."""

from __future__ import annotations

import asyncio
import json
import ssl

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import REGISTRY
from tests.api.helpers import CLIENT
from tests.conftest import TargetServer
from tests.gateway.conftest import StartGateway
from tests.gateway.socks_clients import (
    GREETING,
    auth,
    domain,
    handshake,
    ipv4,
    socks_curl,
    socks_request,
)

from proxyfleet.common.observability.logging import configure_logging
from proxyfleet.devstack.servers import free_port

HANDSHAKE_TIMEOUT = 1.0

_lying_prefix = st.sampled_from(
    [
        b"",
        GREETING,
        GREETING + auth(),
        b"\x05\x05\x02",  # five methods announced, one sent
        GREETING + b"\x01\x40crawler",  # a username shorter than announced
        GREETING + auth() + b"\x05\x01\x00\x03\x20short",  # a name shorter than announced
    ]
)
_handshake = st.one_of(
    st.binary(max_size=80),
    st.builds(lambda prefix, tail: prefix + tail, _lying_prefix, st.binary(max_size=40)),
)

SPECIAL = [
    b"\x04\x01\x00\x50\x7f\x00\x00\x01\x00",  # SOCKS4
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",  # HTTP on the SOCKS port
    b"\x05\x00",  # no method offered
    b"\x05\xff" + bytes(range(255)),  # 255 methods, username/password among them
    GREETING + b"\x05\x07crawler\x05token",  # RFC 1929's version wrong
    GREETING + b"\x01\x00\x05token",  # an empty username
    GREETING + b"\x01\x07crawler\x00",  # an empty password
    GREETING + b"\x01\x02\xff\xfe" + bytes([len(CLIENT)]) + CLIENT.encode(),  # not UTF-8
    GREETING + auth() + b"\x06\x01\x00\x01\x7f\x00\x00\x01\x01\xbb",  # version 6
    GREETING + auth() + b"\x05\x01\x00\x99" + bytes(20),  # address type 0x99
    GREETING + auth() + socks_request(domain("a" * 255), 443),
    GREETING + auth() + socks_request(b"\x03\x00", 443),  # an empty name
    GREETING + auth() + socks_request(ipv4(), 0),  # port 0
    GREETING + auth() + b"\x05\x01\x00\x01\x7f",  # truncated
]

ANSWERS = {b"\x05\x02", b"\x05\xff", b"\x01\x00", b"\x01\x01"}


def _well_formed(answer: bytes) -> bool:
    """Answers as a SOCKS5 server sends them: method choice, auth status, then a reply
    (a refusal's: never success, since no fuzzed request names a reachable target)."""
    while answer[:2] in ANSWERS:
        answer = answer[2:]
    if not answer:
        return True
    return len(answer) == 10 and answer[0] == 5 and answer[1] not in (0, 9) and answer[3] == 1


async def _answer(port: int, data: bytes) -> tuple[bytes, float]:
    """All the gateway sent before it closed, and how long that took."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    try:
        async with asyncio.timeout(HANDSHAKE_TIMEOUT + 5):
            answer = await reader.read(4096)
            while chunk := await reader.read(4096):
                answer += chunk
    except ConnectionResetError:
        answer = b""
    writer.transport.abort()
    return answer, loop.time() - started


async def test_bad_handshakes_are_refused_or_closed_and_the_gateway_stays_up(
    start_gateway: StartGateway,
    fleet: dict[str, int],
    target: TargetServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("gateway", "info", "json")
    errors_before = REGISTRY.get_sample_value(
        "proxyfleet_gateway_tunnels_total", {"outcome": "error"}
    )
    gw = await start_gateway(socks_port=free_port(), cooldown=0.0, header_timeout=HANDSHAKE_TIMEOUT)
    port = gw.assembly.gateway.socks_port
    # A tunnel open all along: it still carries a request after the fuzz.
    open_tunnel = await handshake(port, socks_request(ipv4(), target.port))
    assert open_tunnel.code == 0

    cases: list[bytes] = []

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_handshake)
    def case(data: bytes) -> None:
        cases.append(data)

    case()
    cases += SPECIAL
    answers = await asyncio.gather(*(_answer(port, c) for c in cases))
    for data, (answer, took) in zip(cases, answers, strict=True):
        assert _well_formed(answer), (data, answer)
        assert took < HANDSHAKE_TIMEOUT + 3, (data, took)
    by_case = dict(zip(SPECIAL, (a for a, _ in answers[-len(SPECIAL) :]), strict=True))
    assert by_case[SPECIAL[7]] == b"\x05\x02\x01\x01"  # not UTF-8: refused credentials
    assert by_case[SPECIAL[9]][-10:][1] == 0x08  # address type not supported
    assert by_case[SPECIAL[10]][-10:][1] == 0x04  # no host has a 255-byte name

    await open_tunnel.writer.start_tls(ssl.create_default_context(cafile=target.ca_file))
    open_tunnel.writer.write(b"GET /probe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    page = await asyncio.wait_for(open_tunnel.reader.read(), 10)
    assert page.startswith(b"HTTP/1.1 200")
    open_tunnel.close()
    ok = await socks_curl(port, target.url, ca_file=target.ca_file)
    assert ok.code == 0, ok.stderr
    errors_after = REGISTRY.get_sample_value(
        "proxyfleet_gateway_tunnels_total", {"outcome": "error"}
    )
    assert errors_after == errors_before
    logged = capsys.readouterr()
    for line in logged.out.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            assert record.get("level") not in ("error", "critical"), record
    assert CLIENT not in logged.out + logged.err
