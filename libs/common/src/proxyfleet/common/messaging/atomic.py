"""Publishing one stream's share of an outbox batch so that its ack stands for every message
in it: on a replicated stream, a JetStream atomic batch (nats-server 2.12+, `allow_atomic`
on the stream; E2 in docs/decisions/outbox-and-events.md).

Asking for an ack only on a batch's last message is not enough: when the stream's leader
moves while the batch is in flight, messages before the last can be dropped without an
answer while the last one is stored and acked by the new leader (tests/messaging found
whole batches lost so). An atomic batch is stored whole or not at all, and its commit's
ack says which. Its messages keep their `Nats-Msg-Id`; a batch holding one JetStream has
already stored (a batch published again after its ack was lost) is refused whole, so those
messages go one by one, each acked, the duplicates answered as such.

A stream of one replica has one server and no leader to move: there, one connection's
messages are stored in order, so an ack on the last message stands for the batch, at half
the cost (the relay asks JetStream once how many replicas each stream has).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import msgspec
from nats.aio.client import Client as NatsClient

from proxyfleet.common.core.errors import MessagingUnavailable
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.store.fastid import fast_id
from proxyfleet.common.store.outbox import OutboxEntry

log = get_logger("proxyfleet.relay")

MAX_MESSAGES = 1000
"""Messages a server takes in one atomic batch (its `max_msgs` default)."""
DUPLICATE_IN_BATCH = 10201
"""The batch holds a message id the stream has stored: nothing of it was stored."""
ATOMIC_DISABLED = 10174
"""The stream does not allow atomic batches (declared by an older version)."""


class _Error(msgspec.Struct):
    err_code: int = 0
    description: str = ""


class _PubAck(msgspec.Struct):
    error: _Error | None = None
    count: int = 0
    """Messages the committed batch stored (0: not an atomic batch's ack)."""
    duplicate: bool = False


_ack = msgspec.json.Decoder(_PubAck)


class Batches:
    """Publishes one stream's entries, in order, each chunk all or nothing."""

    def __init__(self, nc: NatsClient, ack_timeout: float, *, atomic: bool | None = None) -> None:
        """`atomic`: atomic batches always (True) or never (False); None: on a stream of
        more than one replica."""
        self._nc = nc
        self._timeout = ack_timeout
        self._atomic_always = atomic
        self._told_unatomic = False
        self._replicated: dict[str, bool] = {}

    async def publish(self, stream: str, entries: Sequence[OutboxEntry]) -> None:
        """Every entry stored (or found already stored) in `stream`, or an error."""
        if not await self._is_replicated(stream):
            await self._last_acked(entries)
            return
        for first in range(0, len(entries), MAX_MESSAGES):
            chunk = entries[first : first + MAX_MESSAGES]
            ack = await self._atomic(chunk)
            if ack.error is None and ack.count == len(chunk):
                continue
            code = ack.error.err_code if ack.error is not None else 0
            if ack.error is not None and code not in (DUPLICATE_IN_BATCH, ATOMIC_DISABLED):
                raise MessagingUnavailable(f"JetStream refused a batch: {ack.error.description}")
            if code != DUPLICATE_IN_BATCH and not self._told_unatomic:
                # No atomic batches (a stream from an older version, or a server before
                # 2.12): each message is acked instead, which costs more but loses nothing.
                self._told_unatomic = True
                log.warning("relay.atomic_batches_unavailable", error=code or "no batch ack")
            await self._one_by_one(chunk)

    async def _is_replicated(self, stream: str) -> bool:
        if self._atomic_always is not None:
            return self._atomic_always
        known = self._replicated.get(stream)
        if known is None:
            info = await self._nc.jetstream().stream_info(stream)
            known = self._replicated[stream] = (info.config.num_replicas or 1) > 1
        return known

    async def _last_acked(self, entries: Sequence[OutboxEntry]) -> None:
        """One server: every message in order, the last one acked for all."""
        for e in entries[:-1]:
            await self._nc.publish(e.subject, e.body, headers={"Nats-Msg-Id": e.msg_id})
        e = entries[-1]
        reply = await self._nc.request(
            e.subject, e.body, self._timeout, headers={"Nats-Msg-Id": e.msg_id}
        )
        _stored(reply.data)

    async def _atomic(self, chunk: Sequence[OutboxEntry]) -> _PubAck:
        batch = fast_id("b", 8)
        last = len(chunk)
        for seq, e in enumerate(chunk[:-1], 1):
            headers = {"Nats-Batch-Id": batch, "Nats-Batch-Sequence": str(seq),
                       "Nats-Msg-Id": e.msg_id}  # fmt: skip
            await self._nc.publish(e.subject, e.body, headers=headers)
        e = chunk[-1]
        headers = {"Nats-Batch-Id": batch, "Nats-Batch-Sequence": str(last),
                   "Nats-Batch-Commit": "1", "Nats-Msg-Id": e.msg_id}  # fmt: skip
        reply = await self._nc.request(e.subject, e.body, self._timeout, headers=headers)
        return _ack.decode(reply.data)

    async def _one_by_one(self, chunk: Sequence[OutboxEntry]) -> None:
        replies = await asyncio.gather(
            *(
                self._nc.request(
                    e.subject, e.body, self._timeout, headers={"Nats-Msg-Id": e.msg_id}
                )
                for e in chunk
            )
        )
        for reply in replies:
            _stored(reply.data)


def _stored(ack_data: bytes) -> None:
    """A single message's ack, or MessagingUnavailable saying why JetStream refused it."""
    ack = _ack.decode(ack_data)
    if ack.error is not None:
        raise MessagingUnavailable(f"JetStream refused a message: {ack.error.description}")
