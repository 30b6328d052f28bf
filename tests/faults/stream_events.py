"""The event stream as the audit reads it back: every message, from the start."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import nats
from nats.errors import NoRespondersError
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.client import JetStreamContext
from nats.js.errors import ServiceUnavailableError
from tests.faults.audit import StreamEvent

from proxyfleet.common.wire.subjects import EVENT_STREAM

UNPLACED_WITHIN = 15.0
"""Seconds a new consumer may answer 503 on a cluster that just re-formed: its create is
acknowledged through the meta leader before a server leads it, so its first pulls can
find no responder. Reading starts over with a new consumer until then."""


async def read_events(url: str) -> list[StreamEvent]:
    """Every message of the events stream, through an ephemeral consumer from the start."""
    nc = await nats.connect(url.split(","), connect_timeout=5, max_reconnect_attempts=0)
    deadline = time.monotonic() + UNPLACED_WITHIN
    try:
        while True:
            try:
                return await _read_all(nc.jetstream())
            except (ServiceUnavailableError, NoRespondersError) as exc:
                if time.monotonic() > deadline:
                    raise
                print(f"events stream: no consumer leader yet ({type(exc).__name__}), again")
                await asyncio.sleep(0.5)
    finally:
        await nc.close()


async def _read_all(js: JetStreamContext) -> list[StreamEvent]:
    total = (await js.stream_info(EVENT_STREAM)).state.messages
    config = ConsumerConfig(
        deliver_policy=DeliverPolicy.ALL, ack_policy=AckPolicy.NONE, inactive_threshold=30
    )
    sub = await js.pull_subscribe("proxyfleet.events.>", stream=EVENT_STREAM, config=config)
    try:
        out: list[StreamEvent] = []
        while len(out) < total:
            try:
                msgs = await sub.fetch(1000, timeout=3)
            except TimeoutError:
                break
            out += [_event(json.loads(m.data)) for m in msgs]
        return out
    finally:
        await sub.unsubscribe()


def _event(body: dict[str, Any]) -> StreamEvent:
    data = body.get("data") or {}
    return StreamEvent(
        id=body["id"],
        type=body["type"],
        time=float(body["time"]),
        proxy_id=body.get("proxy_id", ""),
        lease_id=body.get("lease_id", ""),
        epoch=data.get("epoch"),
        gen=data.get("gen"),
        expires_at=float(data["expires_at"]) if "expires_at" in data else None,
    )
