"""One server-sent event stream: a core NATS subscription to the event subjects (and the
probe subjects when asked), filtered, written as SSE until the client goes away or the
server stops.

Core NATS, not a JetStream consumer: a stream shows what happens from now on (the
`ready` message says the subscription is live), costs the server no consumer state, and
an API replica can serve any number of them. A slow reader does not slow NATS down: its
queue is bounded, and what does not fit is dropped and announced with a `gap` message
(the client refetches what it shows).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import cast

import anyio
import msgspec
from litestar.datastructures import State
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from proxyfleet.api.feed.filters import KEEPALIVE, FeedFilter, is_lease_event, sse
from proxyfleet.api.metrics import EVENT_STREAMS
from proxyfleet.common.core.errors import StoreUnavailable
from proxyfleet.common.domain.tokens import Principal
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.store import LeaseStore
from proxyfleet.common.wire import subjects

log = get_logger(__name__)

QUEUE_MAX = 1000
"""Messages one stream holds for a slow reader before it drops (and says so)."""


class _HeadData(msgspec.Struct):
    client: str = ""
    """A lease event's owner."""


class _Head(msgspec.Struct):
    """The fields a filter reads; the payload itself is passed on as NATS carried it."""

    type: str = ""
    id: str = ""
    proxy_id: str = ""
    lease_id: str = ""
    data: _HeadData = msgspec.field(default_factory=_HeadData)


_head = msgspec.json.Decoder(_Head)
_json = msgspec.json.Encoder()


STATE_KEY = "event_streams"
"""Where the app's EventStreams live on its state."""


def event_streams_of(state: State) -> EventStreams:
    return cast(EventStreams, state[STATE_KEY])


@dataclass
class EventStreams:
    """The app's open streams, ended together when the server stops (an open stream would
    otherwise hold a graceful shutdown forever)."""

    keepalive: float = 15.0
    """Seconds between keep-alive comments on an idle stream (ApiSettings.event_keepalive)."""
    _queues: set[asyncio.Queue[Msg | None]] = field(default_factory=set)
    closed: bool = False

    def add(self, queue: asyncio.Queue[Msg | None]) -> None:
        self._queues.add(queue)
        EVENT_STREAMS.inc()

    def discard(self, queue: asyncio.Queue[Msg | None]) -> None:
        self._queues.discard(queue)
        EVENT_STREAMS.dec()

    def close(self) -> None:
        self.closed = True
        for queue in self._queues:
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(None)  # a full queue is read soon; its reader sees `closed`


@dataclass
class StreamRequest:
    caller: Principal
    filter: FeedFilter
    probes: bool


async def event_stream(
    nc: NatsClient, leases: LeaseStore, streams: EventStreams, req: StreamRequest
) -> AsyncIterator[bytes]:
    queue: asyncio.Queue[Msg | None] = asyncio.Queue(QUEUE_MAX)
    dropped = 0

    async def on_msg(msg: Msg) -> None:
        nonlocal dropped
        try:
            queue.put_nowait(msg)
        except asyncio.QueueFull:
            dropped += 1

    subs = [await nc.subscribe(f"{subjects.EVENT_PREFIX}.>", cb=on_msg)]
    if req.probes:
        probe_subject = subjects.probe_subject(req.filter.proxy_id or "*")
        subs.append(await nc.subscribe(probe_subject, cb=on_msg))
    await nc.flush()  # the server has the subscriptions: `ready` means live
    streams.add(queue)
    owners = _Owners(leases, req.caller)
    try:
        yield sse("ready", b"{}")
        while not streams.closed:
            try:
                msg = await asyncio.wait_for(queue.get(), streams.keepalive)
            except TimeoutError:
                yield KEEPALIVE
                continue
            if dropped:
                yield sse("gap", _json.encode({"dropped": dropped}))
                dropped = 0
            if msg is not None and (out := await _message(msg, req.filter, owners)):
                yield out
    finally:
        streams.discard(queue)
        # The client left (the response's task is being cancelled): unsubscribe anyway.
        with anyio.CancelScope(shield=True):
            for sub in subs:
                await _unsubscribe(sub)


async def _message(msg: Msg, flt: FeedFilter, owners: _Owners) -> bytes:
    if msg.subject.startswith(subjects.PROBE_PREFIX + "."):
        return sse("probe", msg.data)
    try:
        head = _head.decode(msg.data)
    except msgspec.DecodeError:
        log.warning("api.event_undecodable", subject=msg.subject)
        return b""
    if not flt.wants(head.type, head.proxy_id):
        return b""
    if is_lease_event(head.type) and not await owners.may_see(head):
        return b""
    return sse(head.type, msg.data, head.id)


class _Owners:
    """Whether a client token may see a lease event: the lease is its own. Every lease
    event names its owner (`client`); one from an older version that does not (during a
    rolling upgrade) is looked up."""

    def __init__(self, leases: LeaseStore, caller: Principal) -> None:
        self._leases = leases
        self._owner = caller.lease_owner

    async def may_see(self, head: _Head) -> bool:
        if not self._owner:
            return True  # an admin sees every lease
        return (head.data.client or await self._look_up(head.lease_id)) == self._owner

    async def _look_up(self, lease_id: str) -> str:
        try:
            found = await self._leases.get(lease_id)
        except StoreUnavailable:
            return ""
        return found[0].client if found else ""


async def _unsubscribe(sub: Subscription) -> None:
    with contextlib.suppress(Exception):  # NATS closing or gone: nothing left to undo
        await sub.unsubscribe()
