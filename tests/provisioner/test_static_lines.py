"""The static provider's line formats (pure.lines): what people paste, the errors with
their line numbers, stable ids, and the masked form; no reason ever holds a password."""

from __future__ import annotations

import re

import pytest

from proxyfleet.common.wire.models import Scheme
from proxyfleet.provisioner_static.pure.lines import (
    LineError,
    ProxyLine,
    entry_id,
    parse_line,
    parse_lines,
)

SECRET = "s3cr3t-Pa55"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://u:p@127.0.0.1:3128", ProxyLine(Scheme.HTTP, "127.0.0.1", 3128, "u", "p")),
        ("https://proxy.example.com:443", ProxyLine(Scheme.HTTPS, "proxy.example.com", 443)),
        (
            "SOCKS5://a:b@Host.Example:1080",
            ProxyLine(Scheme.SOCKS5, "host.example", 1080, "a", "b"),
        ),
        ("socks5h://h:1", ProxyLine(Scheme.SOCKS5H, "h", 1)),
        ("http://[::1]:8080", ProxyLine(Scheme.HTTP, "::1", 8080)),
        ("http://u%40x:p%3Aq@h:80/", ProxyLine(Scheme.HTTP, "h", 80, "u@x", "p:q")),
        ("127.0.0.2:8080", ProxyLine(Scheme.HTTP, "127.0.0.2", 8080)),
        ("127.0.0.2:8080:user:pa:ss", ProxyLine(Scheme.HTTP, "127.0.0.2", 8080, "user", "pa:ss")),
        ("user:p@ss@127.0.0.3:3128", ProxyLine(Scheme.HTTP, "127.0.0.3", 3128, "user", "p@ss")),
        ("127.0.0.4:80:user:p@ss:x", ProxyLine(Scheme.HTTP, "127.0.0.4", 80, "user", "p@ss:x")),
        ("  h:1  ", ProxyLine(Scheme.HTTP, "h", 1)),
    ],
)
def test_each_format_reads_as_its_proxy(text: str, expected: ProxyLine) -> None:
    assert parse_line(text) == expected


def test_lines_without_a_scheme_take_the_sources() -> None:
    assert parse_line("h:1080:u:p", Scheme.SOCKS5) == ProxyLine(Scheme.SOCKS5, "h", 1080, "u", "p")
    assert parse_line("http://h:1", Scheme.SOCKS5) == ProxyLine(Scheme.HTTP, "h", 1)


@pytest.mark.parametrize("text", ["", "   ", "# a comment", "  # http://u:p@h:1"])
def test_blank_lines_and_comments_are_skipped(text: str) -> None:
    assert parse_line(text) is None


@pytest.mark.parametrize(
    ("text", "kind", "reason"),
    [
        (f"ftp://u:{SECRET}@h:21", "scheme", "unknown scheme 'ftp'"),
        (f"http://u:{SECRET}@h:70000", "port", "port out of range"),
        ("h:0", "port", "port out of range"),
        (f"h:99999:u:{SECRET}", "port", "port out of range"),
        (f"h:port:u:{SECRET}", "port", "not a number"),
        ("http://h", "malformed", "with a port"),
        (f"http://u:{SECRET}@h:1/path", "malformed", "no path"),
        ("just-a-host", "malformed", "expected a URL"),
        ("h:1:u", "malformed", "expected a URL"),
        (f"u:{SECRET}@", "malformed", "host:port"),
        (f"{SECRET}@h:1", "malformed", "user:pass"),
        (f"h_x:1:u:{SECRET}", "malformed", "host name"),
    ],
)
def test_a_bad_line_says_what_is_wrong_and_never_its_password(
    text: str, kind: str, reason: str
) -> None:
    with pytest.raises(LineError, match=re.escape(reason)) as caught:
        parse_line(text)
    assert caught.value.kind == kind
    assert SECRET not in str(caught.value)


def test_a_source_keeps_its_good_lines_and_numbers_the_bad_ones() -> None:
    text = [
        "# proxies",
        "http://u:p@a:1",
        "",
        "b:2",
        "ftp://c:3",
        "http://u:other@a:1",  # same upstream (scheme, host, port, user) as line 2
        "c:70000",
        "socks5://a:1",
    ]
    parsed = parse_lines(text)
    assert [n for n, _ in parsed.entries] == [2, 4, 8]
    assert [(r.line, r.kind) for r in parsed.rejected] == [
        (5, "scheme"),
        (6, "duplicate"),
        (7, "port"),
    ]
    assert parsed.rejected[1].reason == "duplicate of line 2"


def test_ids_are_stable_valid_proxy_ids_that_ignore_the_password() -> None:
    a = ProxyLine(Scheme.HTTP, "h", 1, "u", "p")
    assert entry_id("st", a) == entry_id("st", ProxyLine(Scheme.HTTP, "h", 1, "u", "changed"))
    assert re.fullmatch(r"[a-z0-9][a-z0-9-]{0,62}", entry_id("st", a))
    others = [
        ProxyLine(Scheme.SOCKS5, "h", 1, "u"),
        ProxyLine(Scheme.HTTP, "h2", 1, "u"),
        ProxyLine(Scheme.HTTP, "h", 2, "u"),
        ProxyLine(Scheme.HTTP, "h", 1, "v"),
    ]
    ids = {entry_id("st", a), *(entry_id("st", o) for o in others), entry_id("other", a)}
    assert len(ids) == 6


def test_the_masked_form_hides_the_password() -> None:
    assert parse_line(f"socks5://u:{SECRET}@h:1").masked() == "socks5://u:***@h:1"  # type: ignore[union-attr]
    assert parse_line("http://[::1]:8").masked() == "http://[::1]:8"  # type: ignore[union-attr]
