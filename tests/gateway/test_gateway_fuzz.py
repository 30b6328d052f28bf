"""A bounded fuzz of what clients send: malformed request lines, heads and usernames get
a 4xx (or a closed connection), never a 5xx or a crash, and the gateway keeps serving."""

from __future__ import annotations

import asyncio
import base64

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.api.helpers import CLIENT
from tests.conftest import TargetServer
from tests.gateway.conftest import RunningGateway, StartGateway, connect_head, curl, raw_request

_line = st.one_of(
    st.binary(max_size=120),
    st.builds(
        lambda m, t, v: b" ".join([m, t, v]),
        st.sampled_from([b"CONNECT", b"GET", b"C0NNECT", b"", b"\x00"]),
        st.one_of(st.binary(max_size=40), st.sampled_from([b"a:1", b":443", b"h:99999", b"[::1"])),
        st.sampled_from([b"HTTP/1.1", b"HTTP/1.0", b"HTTP/9", b""]),
    ),
)


async def _answer(gw: RunningGateway, data: bytes) -> int:
    reply = await raw_request(gw.port, data)
    reply.close()
    return reply.status


async def test_malformed_heads_are_refused_and_the_gateway_stays_up(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    gw = await start_gateway(cooldown=0.0, header_timeout=1.0)

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_line, st.lists(st.binary(max_size=60), max_size=4))
    def case(line: bytes, headers: list[bytes]) -> None:
        cases.append(line + b"\r\n" + b"".join(h + b"\r\n" for h in headers) + b"\r\n")

    cases: list[bytes] = []
    case()
    cases += [b"\r\n\r\n", b"CONNECT " + b"a" * 70_000 + b":1 HTTP/1.1\r\n\r\n", b"X" * 20_000]
    answers = await asyncio.gather(*(_answer(gw, c) for c in cases))
    assert all(a == 0 or 400 <= a < 500 for a in answers), sorted(set(answers))
    assert 431 in answers
    ok = await curl(gw.url(), target.url, ca_file=target.ca_file)
    assert ok.code == 0, ok.stderr


async def test_malformed_usernames_are_a_400_or_407(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    gw = await start_gateway(cooldown=0.0)
    usernames: list[str] = []

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.text(max_size=80))
    def case(username: str) -> None:
        usernames.append(username)

    case()
    authority = f"127.0.0.1:{target.port}"
    answers = await asyncio.gather(
        *(_answer(gw, connect_head(authority, u.replace(":", "_"))) for u in usernames)
    )
    assert all(a in (200, 400, 503) for a in answers), sorted(set(answers))
    raw = base64.b64encode(b"\xff\xfe:" + CLIENT.encode()).decode()
    odd = await _answer(
        gw, f"CONNECT {authority} HTTP/1.1\r\nProxy-Authorization: Basic {raw}\r\n\r\n".encode()
    )
    assert odd == 407
    ok = await curl(gw.url(), target.url, ca_file=target.ca_file)
    assert ok.code == 0, ok.stderr
