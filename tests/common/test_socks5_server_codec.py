"""The SOCKS5 server side of the codec (proxyfleet.common.domain.socks5): what the
gateway's SOCKS5 listener reads (greeting, credentials, request) and answers, each refusal
with the answer it calls for; requests and replies checked against the client side."""

from __future__ import annotations

import pytest

from proxyfleet.common.domain import socks5
from proxyfleet.common.domain.socks5 import Reply, Socks5Error


def test_methods_count_reads_the_greeting_prefix() -> None:
    assert socks5.methods_count(b"\x05\x03") == 3


@pytest.mark.parametrize("prefix", [b"\x04\x01", b"\x05\x00", b"\x05", b"", b"GE"])
def test_methods_count_refuses_what_is_no_socks5_greeting(prefix: bytes) -> None:
    with pytest.raises(Socks5Error) as caught:
        socks5.methods_count(prefix)
    assert (caught.value.reply, caught.value.auth) == (None, False)  # closed, no answer


@pytest.mark.parametrize(
    ("methods", "chosen"),
    [(b"\x02", 2), (b"\x00\x02", 2), (b"\x00", 0xFF), (b"\x01\x80", 0xFF), (b"", 0xFF)],
)
def test_choose_method_takes_username_password_only(methods: bytes, chosen: int) -> None:
    assert socks5.choose_method(methods) == chosen
    assert socks5.method_choice(chosen) == bytes([5, chosen])


def test_credentials_round_trip_the_client_side() -> None:
    data = socks5.auth_request("crawler-session-é1", "s3cret:x")
    length = socks5.username_length(data[:2])
    username = data[2 : 2 + length + 1]
    password = data[3 + length :]
    assert socks5.password_length(username) == len(password)
    assert socks5.credentials(username[:-1], password) == ("crawler-session-é1", "s3cret:x")


@pytest.mark.parametrize("prefix", [b"\x05\x03", b"\x01\x00", b"\x00\x03"])
def test_username_length_refuses_a_bad_auth_request(prefix: bytes) -> None:
    with pytest.raises(Socks5Error) as caught:
        socks5.username_length(prefix)
    assert caught.value.auth  # answered with a failure status


def test_an_empty_password_and_a_non_utf8_username_are_refused_credentials() -> None:
    with pytest.raises(Socks5Error) as empty:
        socks5.password_length(b"bob\x00")
    assert empty.value.auth
    with pytest.raises(Socks5Error, match="UTF-8") as odd:
        socks5.credentials(b"\xff\xfe", b"token")
    assert odd.value.auth


def test_auth_status() -> None:
    assert socks5.auth_status(True) == b"\x01\x00"
    assert socks5.auth_status(False) == b"\x01\x01"


@pytest.mark.parametrize(
    ("host", "expected", "is_name"),
    [
        ("example.com", "example.com", True),
        ("127.1.2.3", "127.1.2.3", False),
        ("::1", "[::1]", False),
        ("xn--bcher-kva.example", "xn--bcher-kva.example", True),
    ],
)
def test_parse_request_reads_what_connect_request_writes(
    host: str, expected: str, is_name: bool
) -> None:
    data = socks5.connect_request(host, 8443)
    assert socks5.request_length(data[: socks5.REQUEST_PREFIX_LEN]) == len(data)
    assert socks5.parse_request(data) == socks5.Request(expected, 8443, is_name)


@pytest.mark.parametrize(
    ("data", "reply"),
    [
        (b"\x05\x02\x00\x01\x7f\x00\x00\x01\x00\x50", Reply.COMMAND_NOT_SUPPORTED),  # BIND
        (b"\x05\x03\x00\x01\x7f\x00\x00\x01\x00\x50", Reply.COMMAND_NOT_SUPPORTED),  # UDP
        (b"\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x00", Reply.HOST_UNREACHABLE),  # port 0
        (b"\x05\x01\x00\x03\x03a b\x00\x50", Reply.HOST_UNREACHABLE),
        (b"\x05\x01\x00\x03\x02\xc3\xa9\x00\x50", Reply.HOST_UNREACHABLE),  # not IDNA
        (b"\x05\x01\x00\x03\xff" + b"a" * 255 + b"\x00\x50", Reply.HOST_UNREACHABLE),
    ],
)
def test_parse_request_refuses_with_the_reply_to_send(data: bytes, reply: Reply) -> None:
    assert socks5.request_length(data[:5]) == len(data)
    with pytest.raises(Socks5Error) as caught:
        socks5.parse_request(data)
    assert caught.value.reply == reply


def test_request_length_refuses_an_unknown_address_type_and_a_wrong_version() -> None:
    with pytest.raises(Socks5Error) as odd:
        socks5.request_length(b"\x05\x01\x00\x99\x00")
    assert odd.value.reply == Reply.ADDRESS_TYPE_NOT_SUPPORTED
    with pytest.raises(Socks5Error) as old:
        socks5.request_length(b"\x04\x01\x00\x01\x00")
    assert old.value.reply is None


@pytest.mark.parametrize("reply", list(Reply))
def test_reply_is_one_a_client_reads(reply: Reply) -> None:
    data = socks5.reply(reply)
    assert socks5.reply_length(data[:5]) == len(data) == 10
    if reply == Reply.SUCCEEDED:
        socks5.check_reply(data)
    else:
        with pytest.raises(Socks5Error) as caught:
            socks5.check_reply(data)
        assert caught.value.reply == reply
