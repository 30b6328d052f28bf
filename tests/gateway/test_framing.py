"""Where a body ends (`framing`), directly: lengths, chunks (extensions, trailers, any
split of the bytes), bodies without one, what cannot be delimited, and the bounds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from proxyfleet.gateway import wire
from proxyfleet.gateway.framing import (
    MAX_CHUNK_LINE,
    BadFraming,
    Body,
    Chunked,
    Length,
    ResponseHead,
    UntilClose,
    chunk_size,
    content_length,
    parse_response,
    request_body,
    response_body,
)

CHUNKED = (
    b"5;name=value\r\nhello\r\n"
    b'6 ; a ;b="q;s"\r\n world\r\n'
    b"A\r\n0123456789\r\n"
    b"0\r\nExpires: never\r\nX-Sum: 42\r\n\r\n"
)


def _fed(body: Body, data: bytes, pieces: list[int]) -> int:
    """Feed `data` cut at `pieces`; the bytes taken, asserting that nothing is taken once
    the body is done and everything is taken before."""
    taken, pos = 0, 0
    for cut in [*sorted(pieces), len(data)]:
        piece = data[pos:cut]
        pos = max(pos, cut)
        if not piece:
            continue
        was_done = body.done
        n = body.feed(piece)
        if was_done:
            assert n == 0
        elif not body.done:
            assert n == len(piece)
        taken += n
    return taken


def test_a_length_takes_its_bytes_and_leaves_the_next_message() -> None:
    body = Length(5)
    assert (body.feed(b"hel"), body.done) == (3, False)
    assert (body.feed(b"loGET /next"), body.done) == (2, True)
    assert body.feed(b"more") == 0
    assert Length(0).done
    assert not Length(3).at_eof()


def test_a_chunked_body_with_extensions_and_trailers() -> None:
    body = Chunked()
    assert body.feed(CHUNKED + b"GET http://a/ HTTP/1.1\r\n") == len(CHUNKED)
    assert body.done
    assert body.at_eof()


@given(st.lists(st.integers(0, len(CHUNKED)), max_size=12))
def test_a_chunked_body_split_anywhere(cuts: list[int]) -> None:
    body = Chunked()
    assert _fed(body, CHUNKED + b"NEXT", cuts) == len(CHUNKED)
    assert body.done


def test_a_chunked_body_byte_by_byte() -> None:
    body = Chunked()
    for i, byte in enumerate(CHUNKED):
        assert not body.done
        assert body.feed(bytes([byte])) == 1, i
    assert body.done


def test_a_chunked_body_cut_short_is_not_complete_at_eof() -> None:
    body = Chunked()
    body.feed(CHUNKED[:-2])
    assert not body.done
    assert not body.at_eof()


@pytest.mark.parametrize(
    "data",
    [
        b"zz\r\n",  # not hex
        b"-5\r\n",
        b"0x5\r\n",
        b" 5\r\n",
        b"5 \r\n",  # whitespace only before an extension
        b"\r\n",  # no size at all
        b"1" * 17 + b"\r\n",  # more digits than any size needs
        b"8000000000000000\r\n",  # over 2**63 - 1
        b"5\nhello\r\n",  # a bare LF
        b"5;a\x00b\r\n",  # a control character in an extension
        b"5\r\nhelloXY",  # no CRLF after the data
        b"5\r\nhello\r\n0\r\nno colon\r\n\r\n",
        b"0\r\nBad Name: x\r\n\r\n",
    ],
)
def test_bad_chunked_bodies(data: bytes) -> None:
    with pytest.raises(BadFraming):
        Chunked().feed(data)


def test_chunk_lines_and_trailers_are_bounded() -> None:
    with pytest.raises(BadFraming, match="chunk-size line over"):
        Chunked().feed(b"5;" + b"x" * MAX_CHUNK_LINE)
    body = Chunked(max_trailers=64)
    with pytest.raises(BadFraming, match="trailers over 64"):
        body.feed(b"0\r\n" + b"X-A: b\r\n" * 8 + b"\r\n")
    # a chunk line that never ends is refused once over the bound, piece by piece
    body = Chunked(max_line=16)
    body.feed(b"5;aaaaaa")
    with pytest.raises(BadFraming):
        body.feed(b"bbbbbbbbbb")


def test_chunk_size() -> None:
    assert chunk_size(b"1a") == 26
    assert chunk_size(b"FFFFFFFFFFFFFFF") == 2**60 - 1
    assert chunk_size(b"0;last") == 0


def test_content_length() -> None:
    assert content_length([b"12"]) == 12
    assert content_length([b"5, 5", b"5"]) == 5  # repeated, the same
    for bad in ([b"5, 6"], [b"5", b"6"], [b"-1"], [b"1e3"], [b""], [b"1" * 19]):
        with pytest.raises(BadFraming):
            content_length(bad)


def _req(head: bytes) -> wire.RequestHead:
    return wire.parse_head(head + b"\r\n")


def test_request_bodies() -> None:
    assert request_body(_req(b"GET http://a/ HTTP/1.1\r\n")).done  # none
    length = request_body(_req(b"POST http://a/ HTTP/1.1\r\nContent-Length: 3\r\n"))
    assert isinstance(length, Length)
    assert length.left == 3
    chunked = b"POST http://a/ HTTP/1.1\r\nTransfer-Encoding: gzip, Chunked\r\n"
    assert isinstance(request_body(_req(chunked)), Chunked)


@pytest.mark.parametrize(
    "head",
    [
        b"POST http://a/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n",
        b"POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n",
        b"POST http://a/ HTTP/1.1\r\nTransfer-Encoding: \r\n",
        b"POST http://a/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n",
        b"POST http://a/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n",
        b"POST http://a/ HTTP/1.1\r\nContent-Length: +3\r\n",
    ],
)
def test_requests_that_could_be_read_two_ways_are_a_400(head: bytes) -> None:
    with pytest.raises(wire.BadRequest) as refused:
        request_body(_req(head))
    assert refused.value.status == 400


def _resp(head: bytes) -> ResponseHead:
    return parse_response(head + b"\r\n")


@pytest.mark.parametrize(
    ("method", "head", "kind"),
    [
        ("GET", b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n", "none"),
        ("GET", b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n", Length),
        ("HEAD", b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n", "none"),
        ("HEAD", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n", "none"),
        ("GET", b"HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n", "none"),
        ("GET", b"HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n", "none"),
        ("GET", b"HTTP/1.1 100 Continue\r\n", "none"),
        ("GET", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n", Chunked),
        ("GET", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n", UntilClose),
        ("GET", b"HTTP/1.1 200 OK\r\n", UntilClose),
        ("GET", b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n", UntilClose),
        ("POST", b"HTTP/1.1 500 Oops\r\nContent-Length: 2\r\n", Length),
    ],
)
def test_response_bodies(method: str, head: bytes, kind: object) -> None:
    body = response_body(method, _resp(head))
    if kind == "none":
        assert body.done
    else:
        assert isinstance(body, kind)  # type: ignore[arg-type]
        assert not body.done


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: five\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n",
    ],
)
def test_responses_that_cannot_be_delimited(head: bytes) -> None:
    with pytest.raises(BadFraming):
        response_body("GET", _resp(head))


def test_response_heads() -> None:
    resp = _resp(b"HTTP/1.1 404 Not Found\r\nConnection: Keep-Alive, X-Drop\r\nA: b\r\n")
    assert (resp.version, resp.status, resp.keeps_alive) == ("HTTP/1.1", 404, True)
    assert wire.nominated(resp.headers) == {b"keep-alive", b"x-drop"}
    assert not _resp(b"HTTP/1.1 200 OK\r\nConnection: close\r\n").keeps_alive
    assert not _resp(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n").keeps_alive
    assert _resp(b"HTTP/1.1 200\r\n").status == 200  # no reason phrase
    bad_heads = [b"HTTP/2 200 OK\r\n", b"ICY 200 OK\r\n", b"HTTP/1.1 20 OK\r\n"]
    for bad in [*bad_heads, b"HTTP/1.1 200 OK\r\nx\r\n"]:
        with pytest.raises(BadFraming):
            _resp(bad)


def test_connection_names_never_drop_the_framing_headers() -> None:
    """A `Connection: content-length` must not make the next hop read the body another
    way than the gateway did."""
    req = _req(
        b"POST http://a/ HTTP/1.1\r\nConnection: content-length, x-a\r\nContent-Length: 2\r\n"
    )
    assert wire.nominated(req.headers) == {b"x-a"}


def test_keep_alive_of_requests() -> None:
    assert _req(b"GET http://a/ HTTP/1.1\r\n").keeps_alive
    assert not _req(b"GET http://a/ HTTP/1.1\r\nConnection: foo, Close\r\n").keeps_alive
    assert not _req(b"GET http://a/ HTTP/1.0\r\nConnection: keep-alive\r\n").keeps_alive
    assert _req(b"GET http://a/ HTTP/1.0\r\n").version == "HTTP/1.0"


@given(st.binary(max_size=200), st.lists(st.integers(0, 200), max_size=6))
def test_any_bytes_are_taken_or_bad_framing(data: bytes, cuts: list[int]) -> None:
    body = Chunked(max_line=64, max_trailers=64)
    try:
        taken = _fed(body, data, cuts)
    except BadFraming:
        return
    assert taken == len(data) or body.done
