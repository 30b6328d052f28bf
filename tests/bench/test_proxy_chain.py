"""proxy-chain as the gateway benchmark's peer: installed from npm into a scratch folder, or
missing with the reason (no Node, no npm, an old Node, an unreachable registry); the bench's
script started with proxy-chain's real Server, tunnelling through a real loopback Squid
with that Squid's credentials."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socketserver
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from proxyfleet.bench.health_fleet import SquidPool, start_squids
from proxyfleet.bench.proxy_chain import (
    Installed,
    Missing,
    install,
    node_version,
    npm_failure,
    start,
    upstream_url,
)
from proxyfleet.bench.tunnel_load import Endpoint
from proxyfleet.devstack.servers import free_port

NPM_REFUSED = """\
npm error code ECONNREFUSED
npm error syscall connect
npm error errno ECONNREFUSED
npm error FetchError: request to http://127.0.0.1:9/proxy-chain failed, reason: connect \
ECONNREFUSED 127.0.0.1:9
npm error     at ClientRequest.<anonymous> (/usr/lib/node_modules/npm/lib/index.js:130:14)
npm error   code: 'ECONNREFUSED',
npm error A complete log of this run can be found in: /root/.npm/_logs/debug-0.log
"""
NPM_OFFLINE = """\
npm ERR! code ENOTFOUND
npm ERR! network request to https://registry.npmjs.org/proxy-chain failed, reason: \
getaddrinfo ENOTFOUND registry.npmjs.org
npm ERR! network This is a problem related to network connectivity.
"""


def test_node_versions() -> None:
    assert node_version("v20.20.2\n") == (20, 20, 2)
    assert node_version("18.19.1") == (18, 19, 1)
    assert node_version("node: not a version") is None


def test_npm_failure_keeps_its_code_and_first_message() -> None:
    assert npm_failure(NPM_REFUSED) == (
        "ECONNREFUSED: FetchError: request to http://127.0.0.1:9/proxy-chain failed, "
        "reason: connect ECONNREFUSED 127.0.0.1:9"
    )
    assert npm_failure(NPM_OFFLINE) == (
        "ENOTFOUND: request to https://registry.npmjs.org/proxy-chain failed, reason: "
        "getaddrinfo ENOTFOUND registry.npmjs.org"
    )
    assert npm_failure("Segmentation fault\n") == "Segmentation fault"


def test_upstream_urls_quote_their_credentials() -> None:
    assert upstream_url("127.0.0.1", 3128, "u1", "a:b@c/d") == (
        "http://u1:a%3Ab%40c%2Fd@127.0.0.1:3128"
    )


def test_without_node_or_npm_the_peer_is_missing_with_the_reason(tmp_path: Path) -> None:
    assert install(tmp_path, node="no-such-node") == Missing(
        "no-such-node not found (proxy-chain needs Node >= 20.11)"
    )
    assert install(tmp_path, npm="no-such-npm") == Missing(
        "no-such-npm not found: cannot install proxy-chain@3"
    )


def test_an_old_node_is_not_used(tmp_path: Path) -> None:
    old = tmp_path / "old-node"
    old.write_text("#!/bin/sh\necho v18.19.1\n")
    old.chmod(0o755)
    assert install(tmp_path / "peer", node=str(old)) == Missing(
        "Node v18.19.1: proxy-chain@3 needs >= 20.11"
    )
    assert not (tmp_path / "peer").exists()


def test_an_unreachable_registry_leaves_the_peer_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: the path without it is tested above")
    port = free_port()  # nothing listens there: npm is refused at once
    monkeypatch.setenv("npm_config_registry", f"http://127.0.0.1:{port}/")
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "empty-cache"))  # nothing cached
    monkeypatch.setenv("npm_config_fetch_retry_mintimeout", "50")  # npm's backoff, not ours
    got = install(tmp_path / "peer", timeout=60)
    assert isinstance(got, Missing)
    assert got.reason.startswith("npm install proxy-chain@3 failed: ECONNREFUSED: ")
    assert f"127.0.0.1:{port}" in got.reason


# ---- the script with the real package, through a real Squid ----------------------------


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(4096):
            self.request.sendall(data)


@pytest.fixture(scope="module")
def echo_port() -> Iterator[int]:
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo) as server:
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield server.server_address[1]
        server.shutdown()


@pytest.fixture(scope="module")
def squid(echo_port: int) -> Iterator[SquidPool]:
    base = Path(tempfile.mkdtemp(prefix="pf-bench-peer-"))
    base.chmod(0o711)  # Squid runs as user `proxy` when we are root
    pool = start_squids(base, 1, 1, [echo_port])
    yield pool
    pool.stop()
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    # Offline: tests send nothing past loopback. `make test` ran `make peer-packages`,
    # whose install left every tarball in npm's cache.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("npm_config_offline", "true")
        got = install(tmp_path_factory.mktemp("proxy-chain"))
    if isinstance(got, Missing):
        if shutil.which("npm") is None:  # no Node here at all: the bench's row is missing
            pytest.skip(f"proxy-chain cannot run here: {got.reason}")
        pytest.fail(f"proxy-chain is not in npm's cache (run `make peer-packages`): {got.reason}")
    return got


async def _connect(
    port: int, authority: str
) -> tuple[bytes, asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(Endpoint(port, "anyone", "ignored").connect(authority))
    return await reader.readuntil(b"\r\n\r\n"), reader, writer


async def test_the_script_tunnels_through_the_squid_with_its_credentials(
    installed: Installed, squid: SquidPool, echo_port: int, tmp_path: Path
) -> None:
    assert installed.version.startswith("3.")
    upstream = squid.squids[0]
    user = upstream.users[0]
    good = upstream_url("127.0.0.1", upstream.port, user.username, user.password)
    server = start(installed, [good], tmp_path / "proxy-chain.log")
    try:
        head, reader, writer = await _connect(server.port, f"127.0.0.1:{echo_port}")
        assert head.startswith(b"HTTP/1.1 200"), head
        writer.write(b"through the tunnel\n")
        assert await reader.readline() == b"through the tunnel\n"
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    finally:
        server.stop()
    assert server.proc.returncode == 0  # SIGTERM closed the server cleanly
    assert user.password not in (tmp_path / "proxy-chain.log").read_text()


async def test_the_upstream_is_the_squid_a_wrong_password_is_refused_there(
    installed: Installed, squid: SquidPool, echo_port: int, tmp_path: Path
) -> None:
    upstream = squid.squids[0]
    wrong = upstream_url("127.0.0.1", upstream.port, upstream.users[0].username, "wrong")
    server = start(installed, [wrong], tmp_path / "proxy-chain.log")
    try:
        head, _, writer = await _connect(server.port, f"127.0.0.1:{echo_port}")
        writer.transport.abort()
    finally:
        server.stop()
    # proxy-chain's status for an upstream that answered 407 (its "auth failed" 597)
    assert head.startswith(b"HTTP/1.1 597"), head


def test_a_script_that_cannot_start_says_so(installed: Installed, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="proxy-chain did not start"):
        start(installed, [], tmp_path / "proxy-chain.log")
    assert "no upstreams on stdin" in (tmp_path / "proxy-chain.log").read_text()
