"""The event stream's parsing (no server): SSE lines to messages, messages to models."""

from __future__ import annotations

import pytest

from proxyfleet.client import Event, Gap, Probe
from proxyfleet.client.calls import events
from proxyfleet.client.sse import READY, EventStream, SseMessage, SseParser, decode_message

EVENT = (
    '{"type":"proxy.ready","id":"e1","time":1.5,"proxy_id":"p1","schema_version":1,'
    '"lease_id":"","provider":"local","data":{"from":"booting","gen":2},"newer":true}'
)


def _feed(lines: list[str]) -> list[SseMessage]:
    parser = SseParser()
    return [m for line in lines if (m := parser.feed(line)) is not None]


def test_messages_end_at_a_blank_line_comments_and_retry_dropped() -> None:
    lines = [": keep-alive", "", "event: ready", "data: {}", "", "id: e1"]
    lines += ["event: proxy.ready", "retry: 5000", "data:" + EVENT, ""]
    assert _feed(lines) == [
        SseMessage("ready", "{}"),
        SseMessage("proxy.ready", EVENT, "e1"),
    ]


def test_multi_line_data_joins_with_newlines_and_no_event_is_message() -> None:
    assert _feed(["data: a", "data:  b", "", "event: x", ""]) == [SseMessage("message", "a\n b")]


def test_messages_decode_to_models_and_unknown_kinds_are_skipped() -> None:
    assert decode_message(SseMessage("ready", "{}")) == READY
    event = decode_message(SseMessage("proxy.ready", EVENT, "e1"))
    assert isinstance(event, Event)
    assert (event.type, event.proxy_id, event.data.from_, event.data.gen) == (
        "proxy.ready",
        "p1",
        "booting",
        2,
    )
    probe = decode_message(
        SseMessage("probe", '{"proxy_id":"p1","time":2,"ok":true,"latency_ms":12.5}')
    )
    assert probe == Probe(proxy_id="p1", time=2, ok=True, latency_ms=12.5)
    assert decode_message(SseMessage("gap", '{"dropped": 7}')) == Gap(dropped=7)
    assert decode_message(SseMessage("something-new", "{}")) is None


def test_the_stream_yields_items_line_by_line() -> None:
    stream = EventStream()
    items = [stream.item(x) for x in ["event: ready", "data: {}", "", "event: probe"]]
    assert items == [None, None, READY, None]


@pytest.mark.parametrize(
    ("kwargs", "params"),
    [
        ({}, []),
        ({"types": ["proxy", "lease.granted"]}, [("type", "proxy"), ("type", "lease.granted")]),
        ({"proxy_id": "p1", "probes": True}, [("proxy_id", "p1"), ("probes", "true")]),
    ],
)
def test_the_events_request(kwargs: dict[str, object], params: list[tuple[str, str]]) -> None:
    call = events(**kwargs)  # type: ignore[arg-type]
    assert (call.method, call.path, call.params) == ("GET", "/v1/events", params)
    assert call.headers["Accept"] == "text/event-stream"
