"""`client.events()` against a real API's GET /v1/events: live events after `ready`,
filtered by type, family and proxy, probes on request, another client's leases hidden."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import msgspec
from tests.api.helpers import OTHER_CLIENT
from tests.client.conftest import LiveApi

from proxyfleet.client import AsyncClient, Client, Event, Gap, Probe


class Tail:
    """client.events(...) consumed in a thread of its own until `until` holds."""

    def __init__(
        self,
        live_api: LiveApi,
        token: str,
        until: Callable[[list[Event | Probe | Gap]], bool],
        **filters: object,
    ) -> None:
        self.items: list[Event | Probe | Gap] = []
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self._client = Client(live_api.url, token)
        self._until = until
        self._filters = filters
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        assert self.ready.wait(15), f"no ready message ({self.error!r})"

    def _run(self) -> None:
        stream = self._client.events(on_ready=self.ready.set, **self._filters)  # type: ignore[arg-type]
        try:
            for item in stream:
                self.items.append(item)
                if self._until(self.items):
                    break
        except BaseException as e:  # reported by join()
            self.error = e
        finally:
            stream.close()
            self._client.close()

    def join(self, within: float = 15) -> list[Event | Probe | Gap]:
        self._thread.join(within)
        assert not self._thread.is_alive(), f"still waiting; got {self.items}"
        assert self.error is None, self.error
        return self.items


def _has(event_type: str) -> Callable[[list[Event | Probe | Gap]], bool]:
    return lambda items: any(isinstance(i, Event) and i.type == event_type for i in items)


def test_lease_events_arrive_live_with_their_data(live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    tail = Tail(live_api, live_api.client_token, _has("lease.released"), types=["lease"])
    with Client(live_api.url, live_api.client_token) as client:
        lease = client.grant_lease(ttl=60, target="example.com", holder="me")
        client.release_lease(lease.lease_id, lease.epoch)
    items = tail.join()
    assert [i.type for i in items if isinstance(i, Event)] == ["lease.granted", "lease.released"]
    granted = items[0]
    assert isinstance(granted, Event)
    assert (granted.lease_id, granted.proxy_id) == (lease.lease_id, "p1")
    assert (granted.data.target, granted.data.holder, granted.data.epoch) == (
        "example.com",
        "me",
        lease.epoch,
    )


def test_an_exact_type_and_a_proxy_narrow_the_stream(live_api: LiveApi) -> None:
    tail = Tail(
        live_api,
        live_api.admin_token,
        _has("proxy.ready"),
        types=["proxy.ready"],
        proxy_id="p2",
    )
    live_api.ready_proxy("p1")  # pending .. ready of another proxy: filtered out
    live_api.ready_proxy("p2")
    items = tail.join()
    assert [(i.type, i.proxy_id) for i in items if isinstance(i, Event)] == [("proxy.ready", "p2")]


def test_probes_on_request(live_api: LiveApi) -> None:
    tail = Tail(
        live_api,
        live_api.client_token,
        lambda items: any(isinstance(i, Probe) for i in items),
        probes=True,
    )
    probe = {"proxy_id": "p9", "time": time.time(), "ok": True, "latency_ms": 12.0}
    live_api.run(live_api.nats.publish("proxyfleet.probes.p9", msgspec.json.encode(probe)))
    items = tail.join()
    probes = [i for i in items if isinstance(i, Probe)]
    assert (probes[0].proxy_id, probes[0].ok, probes[0].latency_ms) == ("p9", True, 12.0)


def test_a_client_does_not_see_another_clients_leases(live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    live_api.ready_proxy("p2")
    tail = Tail(live_api, live_api.client_token, _has("lease.granted"), types=["lease"])
    with Client(live_api.url, OTHER_CLIENT) as other:
        theirs = other.grant_lease(ttl=60)
    with Client(live_api.url, live_api.client_token) as client:
        mine = client.grant_lease(ttl=60)
    items = tail.join()
    seen = {i.lease_id for i in items if isinstance(i, Event)}
    assert mine.lease_id in seen
    assert theirs.lease_id not in seen


async def test_the_async_client_streams_too(live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    ready = asyncio.Event()
    async with AsyncClient(live_api.url, live_api.client_token) as client:
        stream = client.events(types=["lease.granted"], on_ready=ready.set)
        first = stream.__anext__()

        async def grant_when_ready() -> str:
            await ready.wait()
            return (await client.grant_lease(ttl=60)).lease_id

        granted_id, event = await asyncio.wait_for(
            asyncio.gather(grant_when_ready(), first), timeout=15
        )
        await stream.aclose()
    assert isinstance(event, Event)
    assert (event.type, event.lease_id) == ("lease.granted", granted_id)
