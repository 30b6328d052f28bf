"""The `vendor_gateway` fixture: one exit address per session id (the same one again for
the same session), a new one per connection without a session, 407 for bad credentials,
nothing past loopback."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from tests.conftest import TargetServer
from tests.upstreams.curl import curl, fetch_target
from tests.upstreams.vendor_gateway import VendorGateway, VendorSession


def test_each_session_leaves_from_its_own_address(
    vendor_gateway: VendorGateway, target: TargetServer
) -> None:
    gw = vendor_gateway
    seen = [
        fetch_target(target, "--proxy", gw.url(session)).seen_ip()
        for session in ("a1", "b2", "a1", "c3", "b2")
    ]
    assert seen[0] == seen[2]
    assert seen[1] == seen[4]
    assert len({seen[0], seen[1], seen[3]}) == 3
    assert gw.sessions() == {
        "a1": VendorSession("a1", "", "127.0.0.10", 2),
        "b2": VendorSession("b2", "", "127.0.0.11", 2),
        "c3": VendorSession("c3", "", "127.0.0.12", 1),
    }
    assert seen == ["127.0.0.10", "127.0.0.11", "127.0.0.10", "127.0.0.12", "127.0.0.11"]


def test_a_session_keeps_the_country_it_asked_for(
    vendor_gateway: VendorGateway, target: TargetServer
) -> None:
    ip = fetch_target(target, "--proxy", vendor_gateway.url("s9", country="de")).seen_ip()
    assert vendor_gateway.sessions() == {"s9": VendorSession("s9", "de", ip, 1)}


def test_without_a_session_every_connection_gets_a_new_exit(
    vendor_gateway: VendorGateway, target: TargetServer
) -> None:
    seen = [fetch_target(target, "--proxy", vendor_gateway.url()).seen_ip() for _ in range(3)]
    assert len(set(seen)) == 3
    assert vendor_gateway.rotating_exits() == seen
    assert vendor_gateway.sessions() == {}


@pytest.mark.parametrize(
    ("username", "password"),
    [
        ("customer-acme-session-x1", "wrong"),
        ("customer-other-session-x1", None),
        ("acme-session-x1", None),
        ("customer-acme-session-x1-country-deu", None),
    ],
)
def test_bad_credentials_get_407(
    vendor_gateway: VendorGateway, target: TargetServer, username: str, password: str | None
) -> None:
    gw = vendor_gateway
    secret = password or gw.password
    url = f"http://{gw.host}:{gw.port}"
    result = fetch_target(target, "--proxy", url, "--proxy-user", f"{username}:{secret}")
    assert result.connect_status == 407
    assert vendor_gateway.refused() == 1
    assert vendor_gateway.sessions() == {}


async def test_no_credentials_get_407_with_a_challenge(vendor_gateway: VendorGateway) -> None:
    head = await _ask(vendor_gateway, b"CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 407 ")
    assert b'Proxy-Authenticate: Basic realm="vendor"' in head


async def test_destinations_past_loopback_are_forbidden(vendor_gateway: VendorGateway) -> None:
    request = (
        "CONNECT 192.0.2.1:443 HTTP/1.1\r\nHost: 192.0.2.1:443\r\n"
        f"Proxy-Authorization: {_basic(vendor_gateway)}\r\n\r\n"
    )
    head = await _ask(vendor_gateway, request.encode())
    assert head.startswith(b"HTTP/1.1 403 ")


def test_plain_http_goes_out_from_the_sessions_address(
    vendor_gateway: VendorGateway, target: TargetServer, http_echo: int
) -> None:
    tunnelled = fetch_target(target, "--proxy", vendor_gateway.url("p1")).seen_ip()
    result = curl("--proxy", vendor_gateway.url("p1"), f"http://127.0.0.1:{http_echo}/x?y=1")
    assert result.code == 0, result.stderr
    assert json.loads(result.body) == {"ip": tunnelled, "path": "/x?y=1", "proxy_auth": ""}
    assert vendor_gateway.sessions()["p1"].connections == 2


# ---- helpers ------------------------------------------------------------------------------


def _basic(gw: VendorGateway) -> str:
    return "Basic " + base64.b64encode(f"{gw.username('z1')}:{gw.password}".encode()).decode()


async def _ask(gw: VendorGateway, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection(gw.host, gw.port)
    try:
        writer.write(request)
        async with asyncio.timeout(5):
            return await reader.readuntil(b"\r\n\r\n")
    finally:
        writer.close()


class _Echo(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps(
            {
                "ip": self.client_address[0],
                "path": self.path,
                "proxy_auth": self.headers.get("Proxy-Authorization", ""),
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def http_echo() -> Iterator[int]:
    """A plain-HTTP echo on 127.0.0.1 (the `target` speaks HTTPS only): its port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
