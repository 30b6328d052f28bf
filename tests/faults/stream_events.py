"""The event stream as the audit reads it back: every message, from the start."""

from __future__ import annotations

import json
from typing import Any

import nats
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from tests.faults.audit import StreamEvent

from proxyfleet.common.wire.subjects import EVENT_STREAM


async def read_events(url: str) -> list[StreamEvent]:
    """Every message of the events stream, through an ephemeral consumer from the start."""
    nc = await nats.connect(url.split(","), connect_timeout=5, max_reconnect_attempts=0)
    try:
        js = nc.jetstream()
        total = (await js.stream_info(EVENT_STREAM)).state.messages
        config = ConsumerConfig(
            deliver_policy=DeliverPolicy.ALL, ack_policy=AckPolicy.NONE, inactive_threshold=30
        )
        sub = await js.pull_subscribe("proxyfleet.events.>", stream=EVENT_STREAM, config=config)
        out: list[StreamEvent] = []
        while len(out) < total:
            try:
                msgs = await sub.fetch(1000, timeout=3)
            except TimeoutError:
                break
            out += [_event(json.loads(m.data)) for m in msgs]
        await sub.unsubscribe()
        return out
    finally:
        await nc.close()


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
