"""The event stream's filters and SSE framing (pure)."""

from __future__ import annotations

import pytest

from proxyfleet.api.feed.filters import KEEPALIVE, FeedFilter, parse_types, sse
from proxyfleet.common.core.errors import InvalidInput


def test_types_and_families_select_events() -> None:
    flt = FeedFilter(parse_types(["lease", "proxy.ready"]))
    assert flt.wants("lease.granted", "p1")
    assert flt.wants("proxy.ready", "p1")
    assert not flt.wants("proxy.deleted", "p1")


def test_no_type_is_every_event_and_a_proxy_id_narrows() -> None:
    assert FeedFilter().wants("proxy.failed", "p9")
    flt = FeedFilter(proxy_id="p1")
    assert flt.wants("lease.expired", "p1")
    assert not flt.wants("lease.expired", "p2")


def test_an_unknown_type_is_refused_with_its_name() -> None:
    with pytest.raises(InvalidInput, match=r"'proxy\.exploded'"):
        parse_types(["proxy.ready", "proxy.exploded"])


def test_a_message_is_id_event_data_and_a_blank_line() -> None:
    assert sse("proxy.ready", b'{"a":1}', "e1") == b'id: e1\nevent: proxy.ready\ndata: {"a":1}\n\n'
    assert sse("ready", b"{}") == b"event: ready\ndata: {}\n\n"
    assert KEEPALIVE.startswith(b":")
    assert KEEPALIVE.endswith(b"\n\n")
