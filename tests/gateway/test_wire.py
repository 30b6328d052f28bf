"""The request head parser and the answers the gateway writes itself, directly."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from proxyfleet.gateway.wire import (
    BadRequest,
    basic_credentials,
    parse_head,
    proxy_status,
    response,
)


def test_connect() -> None:
    req = parse_head(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
    assert (req.method, req.host, req.port, req.is_connect) == ("CONNECT", "example.com", 443, True)
    assert req.header(b"HOST") == b"example.com:443"


def test_plain_request_with_an_absolute_url() -> None:
    req = parse_head(b"GET http://example.com/a?b=1 HTTP/1.1\r\nAccept: */*\r\n\r\n")
    assert (req.host, req.port, req.target, req.authority) == (
        "example.com", 80, "/a?b=1", "example.com:80",
    )  # fmt: skip
    assert parse_head(b"GET http://h:8080 HTTP/1.0\r\n\r\n").target == "/"


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (b"CONNECT example.com HTTP/1.1\r\n\r\n", 400),
        (b"CONNECT example.com:0 HTTP/1.1\r\n\r\n", 400),
        (b"CONNECT example.com:99999 HTTP/1.1\r\n\r\n", 400),
        (b"CONNECT a b HTTP/1.1\r\n\r\n", 400),
        (b"CONNECT example.com:443 HTTP/2.0\r\n\r\n", 400),
        (b"GET /relative HTTP/1.1\r\n\r\n", 400),
        (b"GET https://example.com/ HTTP/1.1\r\n\r\n", 400),
        (b"G(T http://a/ HTTP/1.1\r\n\r\n", 400),
        (b"GET http://a/ HTTP/1.1\r\nno colon\r\n\r\n", 400),
        (b"GET http://a/ HTTP/1.1\r\n folded: x\r\n\r\n", 400),
        (b"GET http://a/ HTTP/1.1\r\nX: a\x00b\r\n\r\n", 400),
        (b"GET http://\xff/ HTTP/1.1\r\n\r\n", 400),
        (b"GET http://a/ HTTP/1.1\r\n" + b"X: y\r\n" * 101 + b"\r\n", 431),
        (b"GET http://a/ HTTP/1.1\r\n", 400),
    ],
)
def test_bad_heads(head: bytes, status: int) -> None:
    with pytest.raises(BadRequest) as caught:
        parse_head(head)
    assert caught.value.status == status


def _basic(text: str) -> bytes:
    return b"Basic " + base64.b64encode(text.encode())


def test_basic_credentials() -> None:
    assert basic_credentials(_basic("user-session-a:tok:en")) == ("user-session-a", "tok:en")
    assert basic_credentials(None) is None
    assert basic_credentials(b"Bearer abc") is None
    assert basic_credentials(b"Basic !!!") is None
    assert basic_credentials(_basic("no-colon")) is None
    assert basic_credentials(b"Basic " + base64.b64encode(b"\xff:x")) is None


def test_an_answer_never_carries_a_line_break_from_a_value() -> None:
    out = response(400, [("X-Why", "a\r\nSet-Cookie: x")], "nope")
    assert b"\r\nSet-Cookie" not in out
    assert out.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert out.endswith(b"\r\n\r\nnope")


def test_proxy_status_quotes_its_details() -> None:
    assert proxy_status("proxy_internal_response", 'no "proxy"') == (
        "Proxy-Status",
        'proxyfleet-gateway; error=proxy_internal_response; details="no \\"proxy\\""',
    )


@given(st.binary(max_size=300))
def test_any_bytes_parse_or_are_a_bad_request(data: bytes) -> None:
    status = 0
    try:
        parse_head(data + b"\r\n\r\n")
    except BadRequest as exc:
        status = exc.status
    assert status == 0 or 400 <= status < 600
