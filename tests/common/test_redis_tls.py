"""A rediss:// URL (a managed Redis's TLS endpoint), against a real Redis with TLS on: the
store's clients (redis-py's pool and the ScriptMux) reach it with the CA the URL names; a
CA that did not sign its certificate is an outage that says so (retried, never a crash)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme

from proxyfleet.common.core.errors import StoreUnavailable
from proxyfleet.common.host.connect import redis_reachable
from proxyfleet.common.store import LuaScript, ScriptMux, connect_redis
from proxyfleet.devstack.servers import free_port, start_redis


@dataclass(frozen=True)
class TlsRedis:
    port: int
    ca_file: Path
    other_ca_file: Path
    """A CA that signed nothing of this server's."""

    def url(self, ca_file: Path) -> str:
        return f"rediss://127.0.0.1:{self.port}/0?ssl_ca_certs={ca_file}"


@pytest.fixture(scope="module")
def tls_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsRedis]:
    directory = tmp_path_factory.mktemp("tls-redis")
    ca, other = trustme.CA(), trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    key_file, cert_file = directory / "server.key", directory / "server.pem"
    cert.private_key_pem.write_to_path(str(key_file))
    cert.cert_chain_pems[0].write_to_path(str(cert_file))
    ca_file, other_ca_file = directory / "ca.pem", directory / "other-ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    other.cert_pem.write_to_path(str(other_ca_file))
    port = free_port()
    # The plain port stays too: start_redis waits on it (both are bound at once).
    server = start_redis(
        directory,
        options=[
            "--tls-port", str(port),
            "--tls-cert-file", str(cert_file),
            "--tls-key-file", str(key_file),
            "--tls-ca-cert-file", str(ca_file),
            "--tls-auth-clients", "no",
        ],
    )  # fmt: skip
    yield TlsRedis(port, ca_file, other_ca_file)
    server.stop()


async def test_both_clients_reach_redis_over_tls(tls_redis: TlsRedis) -> None:
    client = connect_redis(tls_redis.url(tls_redis.ca_file))
    mux = ScriptMux.from_client(client)
    try:
        await redis_reachable("test", tls_redis.url(tls_redis.ca_file), client)
        assert await client.set("tls:plain", "v")
        script = LuaScript("return redis.call('INCR', KEYS[1])")
        assert await mux.run(script, ["tls:mux"], []) == 1
        assert await client.get("tls:mux") == "1"
    finally:
        await mux.aclose()
        await client.aclose()


async def test_a_wrong_ca_is_an_outage_that_names_the_certificate(tls_redis: TlsRedis) -> None:
    url = tls_redis.url(tls_redis.other_ca_file)
    client = connect_redis(url)
    try:
        with pytest.raises(StoreUnavailable, match=r"(?i)certificate verify failed"):
            await ScriptMux.from_client(client).command("PING")
        with pytest.raises(TimeoutError):  # tried again with backoff, not raised
            async with asyncio.timeout(1.0):
                await redis_reachable("test", url, client)
    finally:
        await client.aclose()
