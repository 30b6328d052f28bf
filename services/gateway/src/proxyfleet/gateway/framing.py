"""Where a message body ends (RFC 9112 section 6): a length, chunks, or the end of the
connection; none after HEAD and for 1xx, 204 and 304. Pure: the gateway's sockets feed a
`Body` what arrives and it says how much of that is the body's, so one connection can
carry one request after another (keep-alive). Bodies are relayed as they are, checked
and bounded, never rewritten."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass

from proxyfleet.gateway import wire

MAX_CHUNK_LINE = 4096
"""Longest chunk-size line, extensions included."""
MAX_TRAILERS = 16_384
"""Largest trailer section of a chunked body."""
MAX_CHUNK_SIZE = 2**63 - 1
"""Largest chunk (what a signed 64-bit parser after the gateway still reads)."""
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")
_LENGTH = re.compile(rb"[0-9]{1,18}")
_STATUS_LINE = re.compile(rb"(HTTP/1\.[01]) ([0-9]{3})(?: .*)?", re.DOTALL)


class BadFraming(ValueError):
    """A body that cannot be delimited: a bad length or chunk line, one over a bound, or
    headers a next parser could read another way. From a client: 400; from an upstream:
    502 (once its head went out, the connection is cut)."""


class Body(ABC):
    """A message body being relayed: `feed` it what arrives, in order; it says how much of
    that is the body's, and when the body is complete (`done`). Length, Chunked and
    UntilClose are the three ways a body ends."""

    done = False

    @abstractmethod
    def feed(self, data: bytes) -> int:
        """How many bytes at the start of `data` belong to the body: all of them until it
        is done; what follows is the next message's. Raises BadFraming."""

    def at_eof(self) -> bool:
        """Whether the body is complete if its connection ends now."""
        return self.done


class Length(Body):
    """A body of a known length (Content-Length; 0 for none)."""

    def __init__(self, length: int) -> None:
        self.left = length
        self.done = length == 0

    def feed(self, data: bytes) -> int:
        take = min(self.left, len(data))
        self.left -= take
        self.done = self.left == 0
        return take


class UntilClose(Body):
    """A response that ends with its connection (which then carries nothing else)."""

    def feed(self, data: bytes) -> int:
        return len(data)

    def at_eof(self) -> bool:
        return True


_SIZE, _DATA, _DATA_END, _TRAILERS = range(4)


class Chunked(Body):
    """A chunked body, relayed as it is: sizes, extensions and trailers are checked and
    bounded, not rewritten. Every line must end with CRLF (a bare LF is an error: the next
    parser might split the body elsewhere)."""

    def __init__(self, max_line: int = MAX_CHUNK_LINE, max_trailers: int = MAX_TRAILERS) -> None:
        self._max_line = max_line
        self._max_trailers = max_trailers
        self._state = _SIZE
        self._line = bytearray()
        """A size or trailer line (or a chunk's closing CRLF) not complete yet."""
        self._left = 0
        """Data bytes of the current chunk still to come."""
        self._trailers = 0
        """Bytes of the trailer section so far."""

    def feed(self, data: bytes) -> int:
        pos, end = 0, len(data)
        while pos < end and not self.done:
            if self._state == _DATA:
                take = min(self._left, end - pos)
                pos += take
                self._left -= take
                if not self._left:
                    self._state = _DATA_END
            elif self._state == _DATA_END:
                piece = data[pos : pos + 2 - len(self._line)]
                pos += len(piece)
                self._line += piece
                if not b"\r\n".startswith(self._line):
                    raise BadFraming("a chunk's data is not followed by CRLF")
                if len(self._line) == 2:
                    self._line.clear()
                    self._state = _SIZE
            else:
                pos = self._line_from(data, pos)
        return pos

    def _line_from(self, data: bytes, pos: int) -> int:
        """Gather a size or trailer line from `data[pos:]`; act on it once complete."""
        newline = data.find(b"\n", pos)
        stop = len(data) if newline < 0 else newline + 1
        self._line += data[pos:stop]
        if self._state == _SIZE and len(self._line) > self._max_line:
            raise BadFraming(f"a chunk-size line over {self._max_line} bytes")
        if self._state == _TRAILERS and self._trailers + len(self._line) > self._max_trailers:
            raise BadFraming(f"chunked trailers over {self._max_trailers} bytes")
        if newline < 0:
            return stop
        line = bytes(self._line)
        self._line.clear()
        if not line.endswith(b"\r\n"):
            raise BadFraming("a line of a chunked body ends with a bare LF")
        if self._state == _SIZE:
            self._left = chunk_size(line[:-2])
            self._state = _DATA if self._left else _TRAILERS
        elif line == b"\r\n":
            self.done = True
        else:
            self._trailers += len(line)
            name, sep, value = line[:-2].partition(b":")
            if not sep or not wire.TOKEN.fullmatch(name) or wire.has_control(value):
                raise BadFraming("a trailer line is not 'name: value'")
        return stop


def chunk_size(line: bytes) -> int:
    """The size on a chunk-size line (without its CRLF): hex digits, then extensions
    (`;name=value`, relayed, not interpreted). Raises BadFraming."""
    size, sep, extensions = line.partition(b";")
    if sep:
        size = size.rstrip(b" \t")  # whitespace may come before an extension
    if not _CHUNK_SIZE.fullmatch(size) or int(size, 16) > MAX_CHUNK_SIZE:
        raise BadFraming(f"bad chunk size {size[:20]!r}")
    if wire.has_control(extensions):
        raise BadFraming("a chunk extension has a control character")
    return int(size, 16)


def content_length(values: list[bytes]) -> int:
    """The length that Content-Length fields say: one decimal number (repeated as `5, 5`
    at most); anything else is BadFraming."""
    found = set(wire.list_items(values))
    if len(found) != 1 or not _LENGTH.fullmatch(length := found.pop()):
        raise BadFraming("a bad Content-Length")
    return int(length)


def _framing(headers: list[tuple[bytes, bytes]]) -> Body | None:
    """The body the framing headers say (a chunked one, a length), UntilClose for a
    transfer coding that does not end with chunked, None for neither header."""
    codings = wire.values_of(headers, b"transfer-encoding")
    lengths = wire.values_of(headers, b"content-length")
    if codings:
        if lengths:  # read two ways by two parsers: how requests are smuggled
            raise BadFraming("both Transfer-Encoding and Content-Length")
        items = wire.list_items(codings)
        if not items:
            raise BadFraming("an empty Transfer-Encoding")
        return Chunked() if items[-1] == b"chunked" else UntilClose()
    return Length(content_length(lengths)) if lengths else None


def request_body(req: wire.RequestHead) -> Body:
    """Where a request's body ends: chunked, a Content-Length, or no body. A request that
    could be read two ways is a 400 (RFC 9112 6.3: transfer codings that do not end with
    chunked, Transfer-Encoding in HTTP/1.0, lengths that differ)."""
    try:
        body = _framing(req.headers)
    except BadFraming as exc:
        raise wire.BadRequest(400, f"request framing: {exc}") from None
    if body is None:
        return Length(0)
    if isinstance(body, UntilClose):
        raise wire.BadRequest(400, "request framing: Transfer-Encoding must end with chunked")
    if isinstance(body, Chunked) and req.version != "HTTP/1.1":
        raise wire.BadRequest(400, "request framing: Transfer-Encoding in HTTP/1.0")
    return body


@dataclass(frozen=True, slots=True)
class ResponseHead:
    version: str
    status: int
    headers: list[tuple[bytes, bytes]]

    @property
    def keeps_alive(self) -> bool:
        """Whether the upstream may take another request on this connection: HTTP/1.1
        without `Connection: close`."""
        return self.version == "HTTP/1.1" and b"close" not in wire.connection_tokens(self.headers)


def parse_response(head: bytes) -> ResponseHead:
    """A response head (status line and headers, through the blank line). Raises
    BadFraming for what is not one."""
    status_line, *lines = head.split(b"\r\n")
    m = _STATUS_LINE.fullmatch(status_line)
    if m is None:
        raise BadFraming("not an HTTP/1.x status line")
    headers: list[tuple[bytes, bytes]] = []
    for line in lines:
        if not line:
            continue
        name, sep, value = line.partition(b":")
        if not sep or not wire.TOKEN.fullmatch(name):
            raise BadFraming("a response header line is not 'name: value'")
        headers.append((name, value.strip(b" \t")))
    return ResponseHead(m.group(1).decode(), int(m.group(2)), headers)


def response_body(method: str, resp: ResponseHead) -> Body:
    """Where a response's body ends (RFC 9112 6.3): none after HEAD and for 1xx, 204 and
    304; chunked; a Content-Length; else the end of the connection (so too a transfer
    coding in HTTP/1.0, which cannot be trusted). After a 101 the connection is no longer
    HTTP: BadFraming (the gateway never forwards an Upgrade, so none was asked for)."""
    if resp.status == 101:
        raise BadFraming("101 Switching Protocols, which the gateway never asks for")
    if method == "HEAD" or resp.status < 200 or resp.status in (204, 304):
        return Length(0)
    if resp.version != "HTTP/1.1" and wire.values_of(resp.headers, b"transfer-encoding"):
        return UntilClose()
    return _framing(resp.headers) or UntilClose()
