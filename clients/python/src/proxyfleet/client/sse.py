"""Server-sent events (text/event-stream) parsed line by line, and the messages of
GET /v1/events decoded into models (no I/O here)."""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from proxyfleet.client.models import Event, Gap, Probe

READY = "ready"
"""The event type of the stream's first message: the subscription is live."""
PROBE = "probe"
GAP = "gap"


@dataclass(frozen=True)
class SseMessage:
    event: str
    """The `event:` field; "message" when the server named none."""
    data: str
    id: str = ""


@dataclass
class SseParser:
    """Feed it the stream's lines (without their line ends); a blank line completes a
    message. Comments (`: keep-alive`) and `retry:` are dropped."""

    _event: str = ""
    _id: str = ""
    _data: list[str] = field(default_factory=list)

    def feed(self, line: str) -> SseMessage | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._id = value
        return None

    def _dispatch(self) -> SseMessage | None:
        event, data, self._event, self._data = self._event, self._data, "", []
        if not data:  # the spec: a message without data is not dispatched
            return None
        return SseMessage(event or "message", "\n".join(data), self._id)


@dataclass
class EventStream:
    """The lines of GET /v1/events in, its items out: `item(line)` is an Event, a Probe,
    a Gap, READY once, or None (the line completed nothing, or a kind this client skips)."""

    parser: SseParser = field(default_factory=SseParser)

    def item(self, line: str) -> Event | Probe | Gap | str | None:
        message = self.parser.feed(line)
        return None if message is None else decode_message(message)


def decode_message(message: SseMessage) -> Event | Probe | Gap | str | None:
    """An Event, a Probe, a Gap (events dropped for a slow reader), READY for the first
    message, None for a kind this client does not know (a newer server's: skipped rather
    than failing the stream)."""
    if message.event == READY:
        return READY
    if message.event == PROBE:
        return msgspec.json.decode(message.data, type=Probe)
    if message.event == GAP:
        return msgspec.json.decode(message.data, type=Gap)
    if "." in message.event:  # proxy.ready, lease.granted, ...
        return msgspec.json.decode(message.data, type=Event)
    return None
