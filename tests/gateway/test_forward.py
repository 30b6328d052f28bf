"""The plain-HTTP request head as each kind of upstream gets it (pure): an HTTP(S) proxy
the absolute URL with its own credentials, the origin behind a SOCKS5 tunnel the origin
form without any."""

from __future__ import annotations

import pytest

from proxyfleet.common.store.lease_terms import GrantedProxy
from proxyfleet.gateway.forward import upstream_head
from proxyfleet.gateway.tunnels import Hold
from proxyfleet.gateway.wire import parse_head

UP_USER, UP_SECRET = "up-user", "up-secret"
CLIENT_CREDS = b"Proxy-Authorization: Basic Y3Jhd2xlcjp0b2tlbg==\r\n"


def hold(scheme: str, username: str = UP_USER, password: str = UP_SECRET) -> Hold:
    proxy = GrantedProxy("p1", "static", "z1", "127.0.0.1", 1080, username, password, scheme)
    return Hold("l1", 1, proxy, "crawler", "origin.test")


def request(target: str = "http://origin.test:8080/a?b=1", host: bool = True) -> bytes:
    lines = [f"GET {target} HTTP/1.1\r\n".encode(), CLIENT_CREDS, b"Accept: */*\r\n"]
    if host:
        lines.insert(1, b"Host: origin.test:8080\r\n")
    return b"".join([*lines, b"\r\n"])


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_an_http_proxy_gets_the_absolute_url_and_its_own_credentials(scheme: str) -> None:
    head = upstream_head(parse_head(request()), hold(scheme), keep_alive=True)
    assert head.startswith(b"GET http://origin.test:8080/a?b=1 HTTP/1.1\r\n")
    assert b"Proxy-Authorization: Basic dXAtdXNlcjp1cC1zZWNyZXQ=\r\n" in head
    assert CLIENT_CREDS not in head


@pytest.mark.parametrize("scheme", ["socks5", "socks5h"])
def test_the_origin_behind_socks_gets_the_origin_form_and_no_credentials(scheme: str) -> None:
    head = upstream_head(parse_head(request()), hold(scheme), keep_alive=False)
    assert head == (
        b"GET /a?b=1 HTTP/1.1\r\nHost: origin.test:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    )


def test_the_origin_gets_a_host_header_and_a_path_when_the_client_sent_none() -> None:
    head = upstream_head(
        parse_head(request("http://origin.test?q=1", host=False)), hold("socks5"), keep_alive=True
    )
    assert head == b"GET /?q=1 HTTP/1.1\r\nHost: origin.test:80\r\nAccept: */*\r\n\r\n"


def test_a_proxy_without_credentials_gets_no_proxy_authorization() -> None:
    head = upstream_head(parse_head(request()), hold("http", "", ""), keep_alive=True)
    assert b"proxy-authorization" not in head.lower()
