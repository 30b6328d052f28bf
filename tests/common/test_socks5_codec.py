"""The SOCKS5 client codec (proxyfleet.common.domain.socks5): every function and its error
cases, then whole exchanges with a real SOCKS5 server (the `socks5_upstream` microsocks)."""

from __future__ import annotations

import asyncio
import json
import ssl

import pytest
from tests.conftest import TargetServer
from tests.upstreams.socks5 import Socks5Upstream

from proxyfleet.common.domain import socks5
from proxyfleet.common.domain.socks5 import Reply, Socks5Error
from proxyfleet.devstack.servers import free_port

# ---- greeting and method choice -------------------------------------------------------------


def test_greeting_offers_username_password_only_with_credentials() -> None:
    assert socks5.greeting(with_auth=True) == b"\x05\x01\x02"
    assert socks5.greeting(with_auth=False) == b"\x05\x01\x00"


@pytest.mark.parametrize(
    ("data", "with_auth", "method"),
    [(b"\x05\x02", True, socks5.USER_PASS), (b"\x05\x00", True, 0), (b"\x05\x00", False, 0)],
)
def test_check_method_choice_returns_the_chosen_method(
    data: bytes, with_auth: bool, method: int
) -> None:
    assert socks5.check_method_choice(data, with_auth) == method


@pytest.mark.parametrize("data", [b"", b"\x05", b"\x05\x02\x00", b"\x04\x00", b"HT"])
def test_check_method_choice_refuses_what_is_not_a_socks5_answer(data: bytes) -> None:
    with pytest.raises(Socks5Error, match="not a SOCKS5 server") as caught:
        socks5.check_method_choice(data, with_auth=True)
    assert not caught.value.auth
    assert caught.value.reply is None


@pytest.mark.parametrize(
    ("data", "with_auth"),
    [(b"\x05\xff", True), (b"\x05\xff", False), (b"\x05\x02", False), (b"\x05\x01", True)],
)
def test_check_method_choice_refuses_a_method_not_offered(data: bytes, with_auth: bool) -> None:
    with pytest.raises(Socks5Error, match="none of our auth methods") as caught:
        socks5.check_method_choice(data, with_auth)
    assert caught.value.auth


# ---- username and password ------------------------------------------------------------------


def test_auth_request_is_rfc_1929() -> None:
    assert socks5.auth_request("bob", "p:w@") == b"\x01\x03bob\x04p:w@"


def test_auth_request_counts_bytes_not_characters() -> None:
    assert socks5.auth_request("é", "x") == b"\x01\x02\xc3\xa9\x01x"


def test_auth_request_takes_up_to_255_bytes_each() -> None:
    assert len(socks5.auth_request("u" * 255, "p" * 255)) == 3 + 255 + 255


@pytest.mark.parametrize(
    ("username", "password"), [("", "p"), ("u", ""), ("u" * 256, "p"), ("u", "p" * 256)]
)
def test_auth_request_refuses_empty_or_long_credentials(username: str, password: str) -> None:
    with pytest.raises(ValueError, match="1 to 255 bytes"):
        socks5.auth_request(username, password)


def test_check_auth_status_accepts_success() -> None:
    socks5.check_auth_status(b"\x01\x00")


@pytest.mark.parametrize("data", [b"", b"\x01", b"\x05\x00", b"\x01\x00\x00"])
def test_check_auth_status_refuses_a_malformed_answer(data: bytes) -> None:
    with pytest.raises(Socks5Error, match="bad answer") as caught:
        socks5.check_auth_status(data)
    assert not caught.value.auth


@pytest.mark.parametrize("status", [1, 0xFF])
def test_check_auth_status_reports_refused_credentials(status: int) -> None:
    with pytest.raises(Socks5Error, match="refused the username/password") as caught:
        socks5.check_auth_status(bytes([1, status]))
    assert caught.value.auth


# ---- CONNECT --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("127.0.0.1", b"\x01\x7f\x00\x00\x01"),
        ("::1", b"\x04" + b"\x00" * 15 + b"\x01"),
        ("[::1]", b"\x04" + b"\x00" * 15 + b"\x01"),
        ("example.com", b"\x03\x0bexample.com"),
        ("bücher.example", b"\x03\x15xn--bcher-kva.example"),
    ],
)
def test_connect_request_sends_literals_as_addresses_and_names_as_domains(
    host: str, address: bytes
) -> None:
    assert socks5.connect_request(host, 443) == b"\x05\x01\x00" + address + b"\x01\xbb"


def test_connect_request_packs_the_port_big_endian() -> None:
    assert socks5.connect_request("127.0.0.1", 65535).endswith(b"\xff\xff")
    assert socks5.connect_request("127.0.0.1", 1).endswith(b"\x00\x01")


def test_connect_request_takes_a_name_of_up_to_255_bytes() -> None:
    name = ".".join(["a" * 63] * 4)  # 255 bytes
    assert socks5.connect_request(name, 80)[4] == 255
    with pytest.raises(ValueError, match="too long"):
        socks5.connect_request(name + "a", 80)


@pytest.mark.parametrize(
    ("prefix", "length"),
    [
        (b"\x05\x00\x00\x01\x7f", 10),
        (b"\x05\x00\x00\x04\x00", 22),
        (b"\x05\x00\x00\x03\x0b", 4 + 1 + 11 + 2),
        (b"\x05\x05\x00\x01\x00\xff", 10),  # more than the prefix: only the first 5 count
    ],
)
def test_reply_length_from_the_first_five_bytes(prefix: bytes, length: int) -> None:
    assert socks5.reply_length(prefix) == length


@pytest.mark.parametrize(
    ("prefix", "why"),
    [
        (b"\x05\x00\x00\x01", "bad reply"),
        (b"\x04\x00\x00\x01\x7f", "bad reply"),
        (b"\x05\x00\x00\x02\x00", "bad address type"),
    ],
)
def test_reply_length_refuses_a_malformed_reply(prefix: bytes, why: str) -> None:
    with pytest.raises(Socks5Error, match=why):
        socks5.reply_length(prefix)


def test_check_reply_accepts_success() -> None:
    socks5.check_reply(b"\x05\x00\x00\x01\x7f\x00\x00\x01\x00\x50")


@pytest.mark.parametrize("reply", [r for r in Reply if r is not Reply.SUCCEEDED])
def test_check_reply_names_each_refusal(reply: Reply) -> None:
    with pytest.raises(Socks5Error) as caught:
        socks5.check_reply(bytes([5, reply, 0, 1, 0, 0, 0, 0, 0, 0]))
    assert caught.value.reply is reply
    assert not caught.value.auth
    assert str(caught.value) == "CONNECT refused: " + reply.name.lower().replace("_", " ")


def test_check_reply_reports_an_unknown_code() -> None:
    with pytest.raises(Socks5Error, match="unknown code 9") as caught:
        socks5.check_reply(bytes([5, 9, 0, 1, 0, 0, 0, 0, 0, 0]))
    assert caught.value.reply is None


# ---- against a real SOCKS5 server -----------------------------------------------------------

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def _tunnel(up: Socks5Upstream, password: str, host: str, port: int) -> Streams:
    """The client's side of the exchange, codec functions only (the gateway's and the
    prober's order)."""
    reader, writer = await asyncio.open_connection(up.host, up.port)
    try:
        async with asyncio.timeout(5):
            writer.write(socks5.greeting(with_auth=True))
            data = await reader.readexactly(socks5.METHOD_CHOICE_LEN)
            if socks5.check_method_choice(data, with_auth=True) == socks5.USER_PASS:
                writer.write(socks5.auth_request(up.username, password))
                socks5.check_auth_status(await reader.readexactly(socks5.AUTH_STATUS_LEN))
            writer.write(socks5.connect_request(host, port))
            prefix = await reader.readexactly(socks5.REPLY_PREFIX_LEN)
            rest = await reader.readexactly(socks5.reply_length(prefix) - len(prefix))
            socks5.check_reply(prefix + rest)
    except BaseException:
        writer.close()
        raise
    return reader, writer


async def test_an_exchange_with_microsocks_opens_a_tunnel_to_the_target(
    socks5_upstream: Socks5Upstream, target: TargetServer
) -> None:
    reader, writer = await _tunnel(
        socks5_upstream, socks5_upstream.password, "127.0.0.1", target.port
    )
    try:
        await writer.start_tls(
            ssl.create_default_context(cafile=target.ca_file), server_hostname="127.0.0.1"
        )
        writer.write(b"GET /probe HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        async with asyncio.timeout(5):
            response = await reader.read()
    finally:
        writer.close()
    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
    assert json.loads(body) == {"ok": True, "ip": socks5_upstream.exit_address, "path": "/probe"}


async def test_microsocks_refuses_a_wrong_password(socks5_upstream: Socks5Upstream) -> None:
    with pytest.raises(Socks5Error, match="refused the username/password") as caught:
        await _tunnel(socks5_upstream, "not-the-password", "127.0.0.1", 9)
    assert caught.value.auth


async def test_microsocks_reports_a_closed_port_as_refused(
    socks5_upstream: Socks5Upstream,
) -> None:
    port = free_port()  # bound once, then let go: nothing listens there
    with pytest.raises(Socks5Error) as caught:
        await _tunnel(socks5_upstream, socks5_upstream.password, "127.0.0.1", port)
    assert caught.value.reply is Reply.CONNECTION_REFUSED
    assert not caught.value.auth
