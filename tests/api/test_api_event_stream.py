"""GET /v1/events: the live event stream as server-sent events, read by a real HTTP client
from a real API on real NATS and Redis."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from nats.aio.client import Client as NatsClient
from tests.api.helpers import Api, ApiFactory, error_of, ready_proxy

from proxyfleet.api.feed.stream import event_streams_of
from proxyfleet.api.metrics import EVENT_STREAMS
from proxyfleet.common.wire import subjects


@dataclass
class Message:
    event: str
    data: str
    id: str = ""

    def json(self) -> Any:
        return json.loads(self.data)


class Reader:
    """The messages of one open stream, parsed as the SSE format says (comments kept)."""

    def __init__(self, lines: AsyncIterator[str]) -> None:
        self._lines = lines
        self.comments: list[str] = []

    async def next(self, within: float = 5.0) -> Message:
        return await asyncio.wait_for(self._next(), within)

    async def _next(self) -> Message:
        fields: dict[str, str] = {}
        async for line in self._lines:
            if not line:
                if fields:
                    return Message(
                        fields.get("event", "message"), fields["data"], fields.get("id", "")
                    )
                continue
            if line.startswith(":"):
                self.comments.append(line[1:].strip())
                continue
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
        raise EOFError("the stream ended")

    async def until(self, event: str, within: float = 5.0, **data: Any) -> Message:
        """The next message of that type whose JSON has these fields (others skipped)."""
        async with asyncio.timeout(within):
            while True:
                msg = await self._next()
                if msg.event == event and all(msg.json().get(k) == v for k, v in data.items()):
                    return msg


@asynccontextmanager
async def stream(http: httpx.AsyncClient, **params: Any) -> AsyncIterator[Reader]:
    async with http.stream("GET", "/v1/events", params=params, timeout=None) as r:
        assert r.status_code == 200, await r.aread()
        assert r.headers["content-type"].startswith("text/event-stream")
        reader = Reader(r.aiter_lines())
        first = await reader.next()
        assert (first.event, first.json()) == ("ready", {})  # subscribed: nothing missed now
        yield reader


async def _grant(http: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    r = await http.post("/v1/leases", json={"ttl": 30, **body})
    assert r.status_code == 201, r.text
    granted: dict[str, Any] = r.json()
    return granted


async def test_a_stream_carries_each_event_as_published(api: Api) -> None:
    await ready_proxy(api, "es1", port=4601)
    async with stream(api.admin) as events:
        lease = await _grant(api.client, holder="w1", target="example.com")
        msg = await events.until("lease.granted", lease_id=lease["lease_id"])
        body = msg.json()
        assert msg.id == body["id"]
        assert body["type"] == "lease.granted"
        assert body["proxy_id"] == "es1"
        assert body["data"]["epoch"] == lease["epoch"]
        assert body["data"]["holder"] == "w1"
        assert "s3cret-pass" not in msg.data

        r = await api.client.post(
            f"/v1/leases/{lease['lease_id']}/release", json={"epoch": lease["epoch"]}
        )
        assert r.status_code == 200
        await events.until("lease.released", lease_id=lease["lease_id"])


async def test_types_families_and_a_proxy_filter_what_comes(api: Api) -> None:
    await ready_proxy(api, "ef1", port=4611)
    await ready_proxy(api, "ef2", port=4612)
    async with stream(api.admin, type=["lease.released", "proxy"], proxy_id="ef2") as events:
        other = await _grant(api.admin, proxy_id="ef1")
        mine = await _grant(api.admin, proxy_id="ef2")
        for lease in (other, mine):
            r = await api.admin.post(
                f"/v1/leases/{lease['lease_id']}/release", json={"epoch": lease["epoch"]}
            )
            assert r.status_code == 200
        r = await api.admin.delete("/v1/proxies/ef2", params={"force": "true"})
        assert r.status_code == 202, r.text
        seen = [await events.next()]
        while seen[-1].event != "proxy.deleting":  # bounded by next()'s timeout
            seen.append(await events.next())
        assert {m.json()["proxy_id"] for m in seen} == {"ef2"}
        leases = [(m.event, m.json()["lease_id"]) for m in seen if m.event.startswith("lease.")]
        assert leases == [("lease.released", mine["lease_id"])]


async def test_a_client_sees_its_own_lease_events_and_not_anothers(api: Api) -> None:
    await ready_proxy(api, "eo1", port=4621)
    await ready_proxy(api, "eo2", port=4622)
    async with stream(api.client, type="lease") as events:
        theirs = await _grant(api.other)
        mine = await _grant(api.client)
        await api.other.post(
            f"/v1/leases/{theirs['lease_id']}/renew", json={"epoch": theirs["epoch"]}
        )
        r = await api.client.post(
            f"/v1/leases/{mine['lease_id']}/renew", json={"epoch": mine["epoch"]}
        )
        assert r.status_code == 200
        seen = [await events.next(), await events.next()]
        assert [(m.event, m.json()["lease_id"]) for m in seen] == [
            ("lease.granted", mine["lease_id"]),
            ("lease.renewed", mine["lease_id"]),
        ]


async def test_probe_results_come_when_asked(api: Api, nc: NatsClient) -> None:
    result = {"proxy_id": "ep1", "time": 1.0, "ok": True, "latency_ms": 12.5, "error": ""}
    async with stream(api.client, probes="true", proxy_id="ep1") as events:
        await nc.publish(
            subjects.probe_subject("ep2"), json.dumps(result | {"proxy_id": "ep2"}).encode()
        )
        await nc.publish(subjects.probe_subject("ep1"), json.dumps(result).encode())
        msg = await events.next()
        assert (msg.event, msg.json()) == ("probe", result)


async def test_an_unknown_type_is_400_before_any_stream(api: Api) -> None:
    r = await api.client.get("/v1/events", params={"type": "proxy.exploded"})
    assert r.status_code == 400
    assert error_of(r) == "invalid_event_type"
    assert "proxy.exploded" in r.json()["message"]
    assert (await api.anon.get("/v1/events")).status_code == 401


async def test_an_idle_stream_sends_keep_alives(start_api: ApiFactory) -> None:
    api = await start_api(event_keepalive=0.1)
    async with stream(api.client, type="lease.expired") as events:
        await asyncio.sleep(0.5)
        with pytest.raises(TimeoutError):
            await events.next(within=0.3)
        assert "keep-alive" in events.comments


async def test_a_client_leaving_ends_its_subscription(api: Api) -> None:
    nats = api.services.backends.nats
    before_subs, before_open = len(nats._subs), EVENT_STREAMS._value.get()
    async with stream(api.client, probes="true"):
        assert len(nats._subs) == before_subs + 2
        assert EVENT_STREAMS._value.get() == before_open + 1
    for _ in range(100):  # bounded: 5 s
        if len(nats._subs) == before_subs and EVENT_STREAMS._value.get() == before_open:
            break
        await asyncio.sleep(0.05)
    assert len(nats._subs) == before_subs
    assert EVENT_STREAMS._value.get() == before_open


async def test_closing_the_streams_as_a_stop_does_ends_them(start_api: ApiFactory) -> None:
    """A graceful stop closes them first: they never end by themselves, and uvicorn would
    wait for them."""
    api = await start_api()
    ended = asyncio.Event()

    async def read() -> None:
        async with stream(api.client) as events:
            with pytest.raises((EOFError, httpx.RemoteProtocolError)):
                await events.next(within=10)
        ended.set()

    reader = asyncio.create_task(read())
    await asyncio.sleep(0.3)
    event_streams_of(api.app.state).close()
    await asyncio.wait_for(ended.wait(), 5)
    await reader
