"""What the vendor gateway stand-in reads from a request (pure)."""

from __future__ import annotations

import base64

import pytest
from tests.upstreams.vendor_names import (
    BadHead,
    VendorUsername,
    absolute_form,
    basic_credentials,
    exit_address,
    loopback_destination,
    origin_request,
    parse_head,
    parse_username,
    split_authority,
    vendor_username,
)


@pytest.mark.parametrize(
    ("username", "parsed"),
    [
        ("customer-acme", VendorUsername("acme", "", "")),
        ("customer-acme-session-Ab12", VendorUsername("acme", "Ab12", "")),
        ("customer-acme-session-x-country-de", VendorUsername("acme", "x", "de")),
        ("customer-acme-country-us", VendorUsername("acme", "", "us")),
        ("customer-acme-session-", None),
        ("customer-acme-country-deu", None),
        ("customer-acme-session-a-b", None),
        ("acme-session-x", None),
        ("", None),
    ],
)
def test_parse_username(username: str, parsed: VendorUsername | None) -> None:
    assert parse_username(username) == parsed


def test_vendor_username_is_what_parse_username_reads() -> None:
    assert vendor_username("acme") == "customer-acme"
    name = vendor_username("acme", "s1", "fr")
    assert name == "customer-acme-session-s1-country-fr"
    assert parse_username(name) == VendorUsername("acme", "s1", "fr")


def test_basic_credentials() -> None:
    token = base64.b64encode(b"customer-acme:pw:with@colon").decode()
    assert basic_credentials(f"Basic {token}") == ("customer-acme", "pw:with@colon")
    assert basic_credentials(f"basic  {token} ") == ("customer-acme", "pw:with@colon")
    assert basic_credentials("") is None
    assert basic_credentials(f"Bearer {token}") is None
    assert basic_credentials("Basic !!!") is None
    assert basic_credentials("Basic " + base64.b64encode(b"no-colon").decode()) is None
    assert basic_credentials("Basic " + base64.b64encode(b"\xff:x").decode()) is None


def test_parse_head() -> None:
    head = parse_head(
        b"CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: h\r\nProxy-Authorization: B x\r\n\r\n"
    )
    assert (head.method, head.target) == ("CONNECT", "127.0.0.1:443")
    assert head.header("proxy-authorization") == "B x"
    assert head.header("missing") == ""
    with pytest.raises(BadHead):
        parse_head(b"CONNECT 127.0.0.1:443\r\n\r\n")
    with pytest.raises(BadHead):
        parse_head(b"GET / HTTP/1.1\r\nno colon here\r\n\r\n")


def test_split_authority() -> None:
    assert split_authority("127.0.0.1:443") == ("127.0.0.1", 443)
    assert split_authority("[::1]:8080") == ("::1", 8080)
    for bad in ("127.0.0.1", ":443", "host:port"):
        with pytest.raises(BadHead):
            split_authority(bad)


def test_absolute_form() -> None:
    assert absolute_form("http://127.0.0.1:81/a?b=1") == ("127.0.0.1", 81, "/a?b=1")
    assert absolute_form("http://localhost") == ("localhost", 80, "/")
    assert absolute_form("http://[::1]/x") == ("::1", 80, "/x")
    with pytest.raises(BadHead):
        absolute_form("/relative")


def test_origin_request_drops_the_proxy_headers() -> None:
    head = parse_head(
        b"GET http://127.0.0.1:81/a HTTP/1.1\r\nHost: 127.0.0.1:81\r\n"
        b"Proxy-Authorization: Basic eA==\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n"
    )
    assert origin_request(head, "/a") == (
        b"GET /a HTTP/1.1\r\nHost: 127.0.0.1:81\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    )


def test_loopback_destination() -> None:
    assert loopback_destination("localhost")
    assert loopback_destination("127.1.2.3")
    assert loopback_destination("::1")
    assert not loopback_destination("192.0.2.1")
    assert not loopback_destination("example.com")


def test_exit_address_counts_up_within_loopback() -> None:
    assert exit_address("127.0.0.10", 0) == "127.0.0.10"
    assert exit_address("127.0.0.10", 250) == "127.0.1.4"
    with pytest.raises(ValueError, match=r"127\.0\.0\.0/8"):
        exit_address("127.255.255.254", 2)
