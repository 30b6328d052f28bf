"""Each refusal of the SOCKS5 listener answers the code docs/gateway.md's table gives, then
closes, and is counted (proxyfleet_gateway_socks5_total and tunnels_total by outcome)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from prometheus_client import REGISTRY
from tests.api.helpers import OTHER_CLIENT
from tests.conftest import TargetServer
from tests.gateway.conftest import RunningGateway, StartGateway, ready_proxy
from tests.gateway.socks_clients import GREETING, SocksReply, domain, handshake, ipv4, socks_request
from tests.gateway.test_gateway_upstreams import Upstream, leased
from tests.upstreams.socks5 import Socks5Upstream

from proxyfleet.common.domain import socks5
from proxyfleet.common.domain.socks5 import Reply
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Scheme
from proxyfleet.devstack.servers import free_port


def _count(outcome: str, reply: str) -> float:
    labels = {"outcome": outcome, "reply": reply}
    return REGISTRY.get_sample_value("proxyfleet_gateway_socks5_total", labels) or 0.0


async def _gateway(start_gateway: StartGateway, **settings: object) -> tuple[RunningGateway, int]:
    gw = await start_gateway(socks_port=free_port(), cooldown=0.0, **settings)
    return gw, gw.assembly.gateway.socks_port


async def _refused(got: SocksReply, code: Reply) -> None:
    assert got.code == code, got
    assert await got.closed()


async def test_credentials_refused_with_rfc_1929_status_1(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    _, port = await _gateway(start_gateway)
    before = _count("unauthorized", "auth_failed")
    wrong = await handshake(port, b"", token="not-a-token")
    assert wrong.status == b"\x01\x01"
    assert await wrong.closed()
    assert _count("unauthorized", "auth_failed") == before + 1
    typo = await handshake(port, b"", username="crawler-sesion-x")
    assert typo.status == b"\x01\x01"
    assert await typo.closed()
    # another client's token is fine: its own credentials
    other = await handshake(port, socks_request(ipv4(), target.port), token=OTHER_CLIENT)
    assert other.code == Reply.SUCCEEDED
    other.close()


async def test_a_client_without_username_password_gets_no_method(
    start_gateway: StartGateway, fleet: dict[str, int]
) -> None:
    _, port = await _gateway(start_gateway)
    got = await handshake(port, b"", greeting=bytes([5, 1, socks5.NO_AUTH]))
    assert got.choice == bytes([5, socks5.NO_ACCEPTABLE])
    assert await got.closed()


@pytest.mark.parametrize("command", [socks5.CMD_BIND, socks5.CMD_UDP_ASSOCIATE, 0x09])
async def test_only_connect_is_taken(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer, command: int
) -> None:
    _, port = await _gateway(start_gateway)
    got = await handshake(port, socks_request(ipv4(), target.port, command))
    await _refused(got, Reply.COMMAND_NOT_SUPPORTED)


async def test_an_unknown_address_type_and_a_name_that_is_no_host(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    _, port = await _gateway(start_gateway)
    odd = await handshake(port, b"\x05\x01\x00\x99\x04abcd\x01\xbb")
    await _refused(odd, Reply.ADDRESS_TYPE_NOT_SUPPORTED)
    long_name = await handshake(port, socks_request(domain("a" * 255), 443))
    await _refused(long_name, Reply.HOST_UNREACHABLE)
    spaced = await handshake(port, socks_request(domain("a b\r\nX: y"), 443))
    await _refused(spaced, Reply.HOST_UNREACHABLE)


async def test_no_proxy_available_is_a_general_failure(
    start_gateway: StartGateway, target: TargetServer
) -> None:
    _, port = await _gateway(start_gateway)
    before = _count("unavailable", "general_failure")
    got = await handshake(port, socks_request(ipv4(), target.port))
    await _refused(got, Reply.GENERAL_FAILURE)
    assert _count("unavailable", "general_failure") == before + 1


async def test_an_unknown_pool_is_not_allowed(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    _, port = await _gateway(start_gateway)
    got = await handshake(port, socks_request(ipv4(), target.port), username="c-pool-nosuchpool")
    await _refused(got, Reply.NOT_ALLOWED)


async def test_a_target_the_upstream_forbids_is_not_allowed(
    start_gateway: StartGateway, fleet: dict[str, int]
) -> None:
    """The Squids take CONNECT to the target's port only: 403, on both proxies tried."""
    _, port = await _gateway(start_gateway)
    got = await handshake(port, socks_request(ipv4(), free_port()))
    await _refused(got, Reply.NOT_ALLOWED)


async def test_a_target_that_refuses_is_connection_refused(
    start_gateway: StartGateway, registry: ProxyRegistry, socks5_upstream: Socks5Upstream
) -> None:
    up = Upstream(Scheme.SOCKS5H, socks5_upstream.port, socks5_upstream.username,
                  socks5_upstream.password, socks5_upstream.exit_address)  # fmt: skip
    await leased(registry, up)
    _, port = await _gateway(start_gateway)
    got = await handshake(port, socks_request(ipv4(), free_port()))  # nothing listens there
    await _refused(got, Reply.CONNECTION_REFUSED)


async def test_an_upstream_that_cannot_be_reached_is_network_unreachable(
    start_gateway: StartGateway, registry: ProxyRegistry, target: TargetServer
) -> None:
    for _ in range(2):  # the retry fails too
        await ready_proxy(registry, free_port())
    _, port = await _gateway(start_gateway)
    before = _count("upstream_failed", "network_unreachable")
    got = await handshake(port, socks_request(ipv4(), target.port))
    await _refused(got, Reply.NETWORK_UNREACHABLE)
    assert _count("upstream_failed", "network_unreachable") == before + 1


@pytest.fixture
async def silent_proxy() -> AsyncIterator[int]:
    """A port that accepts connections and never answers."""
    held: list[asyncio.StreamWriter] = []

    async def keep(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(keep, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    for writer in held:
        writer.transport.abort()
    server.close()


async def test_an_upstream_that_does_not_answer_is_ttl_expired(
    start_gateway: StartGateway, registry: ProxyRegistry, target: TargetServer, silent_proxy: int
) -> None:
    await ready_proxy(registry, silent_proxy)
    _, port = await _gateway(start_gateway, connect_timeout=0.3)
    got = await handshake(port, socks_request(ipv4(), target.port))
    await _refused(got, Reply.TTL_EXPIRED)


async def test_at_the_connection_limit_a_general_failure(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    _, port = await _gateway(start_gateway, max_connections=1)
    first = await handshake(port, socks_request(ipv4(), target.port))
    assert first.code == Reply.SUCCEEDED
    before = _count("busy", "general_failure")
    second = await handshake(port, socks_request(ipv4(), target.port))
    await _refused(second, Reply.GENERAL_FAILURE)
    assert _count("busy", "general_failure") == before + 1
    first.close()


async def test_a_handshake_not_finished_in_time_is_closed(
    start_gateway: StartGateway, fleet: dict[str, int]
) -> None:
    _, port = await _gateway(start_gateway, header_timeout=0.3)
    before = _count("timeout", "none")
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(GREETING)
    assert await reader.readexactly(2) == b"\x05\x02"
    async with asyncio.timeout(5):  # no auth request follows: closed at the timeout
        assert await reader.read() == b""
    writer.close()
    assert _count("timeout", "none") == before + 1
