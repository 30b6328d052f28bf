"""The gateway with leased proxies of each scheme, the real upstreams of tests/upstreams
(microsocks for `socks5` and `socks5h`, Squid's https_port for `https`): CONNECT and
plain HTTP through each, refused credentials retried on another proxy or answered 502,
targets the upstream cannot reach, and the upstream's credentials never in what the
client receives or in a log line."""

from __future__ import annotations

import base64
import json
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
from tests.api.helpers import PROVIDER, Recorder
from tests.conftest import TargetServer
from tests.gateway.conftest import StartGateway, connect_head, curl, eventually, raw_request
from tests.gateway.http_peers import Client, origin
from tests.gateway.test_upstream_dialer import tls_proxy
from tests.upstreams.socks5 import Socks5Upstream
from tests.upstreams.tls_proxy import TlsUpstream

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.observability.logging import configure_logging
from proxyfleet.common.store import LeaseStore, ProxyRegistry
from proxyfleet.common.wire.models import Phase, Proxy, Scheme
from proxyfleet.devstack.servers import free_port
from proxyfleet.gateway import upstream as upstream_module

_ids = iter(range(1_000_000))


@dataclass(frozen=True)
class Upstream:
    """One of the real upstreams, as a leased proxy of `scheme` is registered for it."""

    scheme: Scheme
    port: int
    username: str
    password: str
    exit_address: str
    ca_file: str = ""
    """The CA bundle that verifies it (https); "" for the system's store."""

    def secrets(self, password: str = "") -> list[str]:
        """What must never reach a client or a log line: the credentials, as they are,
        percent-encoded (in a URL) and as Basic credentials."""
        password = password or self.password
        basic = base64.b64encode(f"{self.username}:{password}".encode()).decode()
        return [self.username, password, quote(password, safe=""), basic]


@pytest.fixture(params=["socks5", "socks5h", "https"])
def upstream(request: pytest.FixtureRequest) -> Upstream:
    """Each kind of upstream in turn (only the one a test runs with is started)."""
    if request.param == "https":
        tls: TlsUpstream = request.getfixturevalue("tls_upstream")
        return Upstream(Scheme.HTTPS, tls.port, tls.username, tls.password, tls.exit_address,
                        tls.ca_file)  # fmt: skip
    socks: Socks5Upstream = request.getfixturevalue("socks5_upstream")
    return Upstream(Scheme(request.param), socks.port, socks.username, socks.password,
                    socks.exit_address)  # fmt: skip


async def upstream_proxy(
    registry: ProxyRegistry,
    scheme: Scheme,
    port: int,
    username: str,
    password: str,
    *,
    zone: str = "z1",
) -> str:
    """A ready proxy of `scheme` on 127.0.0.1:port straight through the registry (what a
    static provider and health do); its id."""
    now = time.time()
    pid = f"up{next(_ids):05d}"
    proxy = Proxy(
        id=pid, provider=PROVIDER, zone=zone, phase=Phase.PENDING, gen=0, scheme=scheme,
        external=True, username=username, password=password, created_at=now, updated_at=now,
    )  # fmt: skip
    assert await registry.create(proxy)
    await registry.transition(pid, Phase.PROVISIONING)
    await registry.transition(pid, Phase.BOOTING, host="127.0.0.1", port=port)
    await registry.transition(pid, Phase.READY, last_ok_at=now)
    return pid


async def leased(
    registry: ProxyRegistry, up: Upstream, *, password: str = "", zone: str = "z1"
) -> str:
    return await upstream_proxy(
        registry, up.scheme, up.port, up.username, password or up.password, zone=zone
    )


def assert_hidden(secrets: list[str], *seen: str | bytes) -> None:
    for text in seen:
        blob = text.decode(errors="replace") if isinstance(text, bytes) else text
        for secret in secrets:
            assert secret not in blob, f"{secret!r} reached the client or a log"


async def test_connect_through_the_upstream_leaves_from_its_exit(
    start_gateway: StartGateway, registry: ProxyRegistry, target: TargetServer, upstream: Upstream
) -> None:
    pid = await leased(registry, upstream)
    gw = await start_gateway(upstream_ca_bundle=upstream.ca_file)
    # A name: socks5 resolves it here, socks5h and the HTTPS proxy there.
    got = await curl(gw.url(), f"https://localhost:{target.port}/probe", ca_file=target.ca_file)
    assert got.code == 0, got.stderr
    assert json.loads(got.body)["ip"] == upstream.exit_address
    assert got.header("X-Proxyfleet-Proxy-Id") == [pid]
    assert_hidden(upstream.secrets(), got.head, got.body, got.stderr)


async def test_a_session_keeps_its_upstream_across_connections(
    start_gateway: StartGateway, registry: ProxyRegistry, target: TargetServer, upstream: Upstream
) -> None:
    pid = await leased(registry, upstream)
    gw = await start_gateway(upstream_ca_bundle=upstream.ca_file)
    for _ in range(2):  # the second rides on the session's renewed lease
        got = await curl(gw.url("c-session-s1"), target.url, ca_file=target.ca_file)
        assert got.code == 0, got.stderr
        assert json.loads(got.body)["ip"] == upstream.exit_address
        assert got.header("X-Proxyfleet-Proxy-Id") == [pid]


async def test_plain_requests_through_the_upstream_share_one_connection(
    start_gateway: StartGateway, registry: ProxyRegistry, upstream: Upstream
) -> None:
    await leased(registry, upstream)
    gw = await start_gateway(upstream_ca_bundle=upstream.ca_file)
    async with origin() as site:
        client = await Client.open(gw.port)
        base = f"http://localhost:{site.port}"
        replies = [await client.request("GET", f"{base}/len/5")]
        [relay] = list(gw.tunnels)
        replies.append(await client.request("POST", f"{base}/echo", body=b"abc"))
        replies.append(await client.request("GET", f"{base}/chunked"))
        [still] = list(gw.tunnels)
        assert still.upstream is relay.upstream  # the gateway kept its connection
        client.close()
        await eventually(lambda: len(gw.tunnels) == 0)
    assert [(r.status, r.body) for r in replies] == [
        (200, b"LLLLL"), (200, b"abc"), (200, b"first,second,third"),
    ]  # fmt: skip
    assert len({r.lease_id for r in replies}) == 1
    assert set(site.peers) == {upstream.exit_address}
    if upstream.scheme != Scheme.HTTPS:  # one SOCKS tunnel carried them (Squid pools its own)
        assert site.connections == 1
    assert site.heads[0].startswith(b"GET /len/5 HTTP/1.1\r\n")
    for head in site.heads:
        assert b"proxy-authorization" not in head.lower()
    assert_hidden(upstream.secrets(), *(repr(r) for r in replies))


async def test_plain_requests_for_another_host_get_a_tunnel_of_their_own(
    start_gateway: StartGateway, registry: ProxyRegistry, socks5_upstream: Socks5Upstream
) -> None:
    up = socks5_upstream
    pid = await upstream_proxy(registry, Scheme.SOCKS5H, up.port, up.username, up.password)
    gw = await start_gateway()
    async with origin("127.0.0.1") as one, origin("127.0.0.2") as two:
        client = await Client.open(gw.port)
        username = "c-session-plain"  # one lease for every host
        first = await client.request("GET", one.url("/len/1"), username=username)
        second = await client.request("GET", two.url("/len/2"), username=username)
        third = await client.request("GET", one.url("/len/3"), username=username)
        client.close()
    assert [r.body for r in (first, second, third)] == [b"L", b"LL", b"LLL"]
    assert {r.headers["x-proxyfleet-proxy-id"] for r in (first, second, third)} == {pid}
    assert (one.connections, two.connections) == (2, 1)  # a tunnel goes to one host only


async def test_refused_credentials_are_reported_and_retried_on_another_proxy(
    start_gateway: StartGateway,
    registry: ProxyRegistry,
    target: TargetServer,
    upstream: Upstream,
    events: Recorder,
) -> None:
    wrong = "wrong:" + upstream.password
    refused = await leased(registry, upstream, password=wrong, zone="z2")
    good = await leased(registry, upstream, zone="z2")
    gw = await start_gateway(upstream_ca_bundle=upstream.ca_file, cooldown=0.0)
    served = []
    for _ in range(3):
        got = await curl(gw.url("c-zone-z2"), target.url, ca_file=target.ca_file)
        assert got.code == 0, got.stderr
        served += got.header("X-Proxyfleet-Proxy-Id")
        assert_hidden(upstream.secrets(wrong), got.head, got.body, got.stderr)
    assert served == [good] * 3
    failed = await events.event("lease.reported", proxy_id=refused)
    assert failed.data.outcome == "failed"


async def test_refused_credentials_everywhere_are_a_502_that_never_shows_them(
    start_gateway: StartGateway,
    registry: ProxyRegistry,
    upstream: Upstream,
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("gateway", "info", "json")
    wrong = "wrong:" + upstream.password
    for _ in range(2):
        await leased(registry, upstream, password=wrong)
    gw = await start_gateway(upstream_ca_bundle=upstream.ca_file, cooldown=0.0)
    reply = await raw_request(gw.port, connect_head("127.0.0.1:443"))
    body = await reply.reader.read()
    reply.close()
    async with origin() as site:
        plain = await Client.open(gw.port)
        answer = await plain.request("GET", site.url("/len/1"))
        plain.close()
    assert reply.status == 502
    assert answer.status == 502
    status = reply.header("Proxy-Status") or ""
    assert "error=destination_unavailable" in status
    said = "refused the username/password" if upstream.scheme != Scheme.HTTPS else "with 407"
    assert said in status
    logged = capsys.readouterr()
    assert "gateway.upstream_failed" in logged.out
    assert_hidden(upstream.secrets(wrong), reply.head, body, repr(answer), logged.out, logged.err)


async def test_a_target_the_upstream_cannot_reach_is_a_502_naming_why(
    start_gateway: StartGateway, registry: ProxyRegistry, upstream: Upstream, events: Recorder
) -> None:
    pid = await leased(registry, upstream)
    gw = await start_gateway(upstream_ca_bundle=upstream.ca_file)
    reply = await raw_request(gw.port, connect_head(f"127.0.0.1:{free_port()}"))  # closed
    reply.close()
    assert reply.status == 502
    status = reply.header("Proxy-Status") or ""
    assert "error=destination_unavailable" in status
    # microsocks answers with the SOCKS5 reply code; Squid with a 503
    said = "connection refused" if upstream.scheme != Scheme.HTTPS else "with 503"
    assert said in status
    failed = await events.event("lease.reported", proxy_id=pid)
    assert failed.data.outcome == "failed"


async def test_a_name_the_gateway_cannot_resolve_for_socks5_is_a_dns_error(
    start_gateway: StartGateway,
    registry: ProxyRegistry,
    socks5_upstream: Socks5Upstream,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def no_such_name(host: str, port: int) -> str:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(upstream_module, "resolve", no_such_name)  # no query leaves the host
    up = socks5_upstream
    await upstream_proxy(registry, Scheme.SOCKS5, up.port, up.username, up.password)
    gw = await start_gateway()
    reply = await raw_request(gw.port, connect_head("nowhere.test:443"))
    reply.close()
    assert reply.status == 502
    assert "error=dns_error" in (reply.header("Proxy-Status") or "")


async def test_a_tunnel_through_an_https_upstream_ends_when_its_client_closes(
    start_gateway: StartGateway, registry: ProxyRegistry, lease_store: LeaseStore, tmp_path: Path
) -> None:
    async with tls_proxy(tmp_path) as up:  # TLS, then 200 to CONNECT, then an echo
        await upstream_proxy(registry, Scheme.HTTPS, up.port, "tls-user", "tls-pw")
        gw = await start_gateway(upstream_ca_bundle=up.ca_file, cooldown=0.0)
        for _ in range(2):  # the second one gets the proxy its first released
            reply = await raw_request(gw.port, connect_head("127.0.0.1:9"))
            assert reply.status == 200
            reply.writer.write(b"ping")
            assert await reply.reader.readexactly(4) == b"ping"
            lease_id = reply.header("X-Proxyfleet-Lease-Id")
            reply.writer.close()  # a FIN: TLS cannot pass it on, so the tunnel ends
            await eventually(lambda: len(gw.tunnels) == 0)
            assert lease_id is not None
            found = await lease_store.get(lease_id)
            assert found is not None
            assert found[1] == "released"


async def test_a_ca_bundle_that_cannot_load_stops_the_gateway_at_start(
    start_gateway: StartGateway, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match="--upstream-ca-bundle"):
        await start_gateway(upstream_ca_bundle=str(tmp_path / "missing.pem"))
