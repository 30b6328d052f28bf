"""A create that fails over to another zone records that zone for its proxy: the API, the
runner and the GCP adapter against the fake GCE, with real Redis and NATS. The registry,
`GET /v1/proxies/{id}`, the proxy listing by zone and a grant by zone agree; the booting
event names both zones."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient
from tests.api.helpers import ADMIN, CLIENT, api_settings
from tests.api.serving import serve
from tests.gcp.gcp_provider import ZONES, instances_of, settings_for
from tests.provisioner.helpers import EventLog, fast_settings, wait_for_phase, wait_until

from proxyfleet.api.app import create_app
from proxyfleet.api.deps import AppDeps
from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.providers import parse_providers_config
from proxyfleet.common.runner import ProvisionerRunner
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.events import EventData, EventType
from proxyfleet.common.wire.models import Phase
from proxyfleet.provisioner_gcp.adapter import GcpProvider

INSTALLATION = "dev"
"""The API's installation id (CommonSettings' default): the runner's too."""


@dataclass
class Stack:
    provider: str
    """This test's provider name: its own intent subjects and durable consumer."""
    registry: ProxyRegistry
    admin: httpx.AsyncClient
    client: httpx.AsyncClient
    events: EventLog


def _providers_yaml(name: str, fake: Any) -> str:
    zones = ", ".join(f"{z}: {g}" for z, g in ZONES.items())
    return f"""
providers:
  - name: {name}
    type: gcp
    zones: [{", ".join(ZONES)}]
    gcp:
      project: {fake.project}
      zones: {{{zones}}}
      source_ranges: [127.0.0.0/8]
      api_endpoint: {fake.endpoint}
      anonymous: true
"""


@pytest.fixture
async def stack(
    fake_gce: Any, redis_client: aioredis.Redis, redis_url: str, nats_url: str, nc: NatsClient
) -> AsyncIterator[Stack]:
    name = f"g{secrets.token_hex(4)}"
    clock = SystemClock()
    providers = parse_providers_config(_providers_yaml(name, fake_gce), "providers.yaml")
    app = create_app(api_settings(redis_url, nats_url), AppDeps(providers=providers, clock=clock))
    url, stop_api = await serve(app)
    registry = ProxyRegistry(redis_client, clock)
    provider = GcpProvider(settings_for(fake_gce), INSTALLATION, name, address_poll_interval=0.05)
    runner = ProvisionerRunner(
        nc=nc,
        registry=registry,
        provider=provider,
        settings=fast_settings(name),
        installation_id=INSTALLATION,
        clock=clock,
    )
    stop_runner = asyncio.Event()
    running = asyncio.create_task(runner.run(stop_runner))
    events = EventLog()
    sub = await nc.subscribe("proxyfleet.events.proxy.>", cb=events.on_msg)
    admin = httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {ADMIN}"})
    client = httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {CLIENT}"})
    try:
        await wait_until(runner.ready, 5.0, "the runner to be ready")
        yield Stack(name, registry, admin, client, events)
    finally:
        await admin.aclose()
        await client.aclose()
        await sub.unsubscribe()
        stop_runner.set()
        await asyncio.wait_for(running, 10)
        await provider.close()
        await stop_api()


async def test_a_proxy_that_failed_over_is_registered_granted_and_listed_in_its_new_zone(
    fake_gce: Any, stack: Stack
) -> None:
    fake_gce.inject("instances.insert", "ZONE_RESOURCE_POOL_EXHAUSTED", zone="us-central1-a")
    made = await stack.admin.post("/v1/proxies", json={"provider": stack.provider, "zone": "us-a"})
    assert made.status_code == 202, made.text
    [created] = made.json()["items"]
    assert created["zone"] == "us-a"
    pid = created["id"]

    booting = await wait_for_phase(stack.registry, pid, Phase.BOOTING, within=30.0)
    [vm] = instances_of(fake_gce, pid)
    assert vm["zone"] == "us-central1-b"
    assert booting.resource_id == f"us-central1-b/{vm['name']}"
    assert booting.zone == "us-b"

    async def announced() -> bool:
        return EventType.PROXY_BOOTING in stack.events.types_of(pid)

    await wait_until(announced, 10.0, "the proxy.booting event")
    [event] = [e for e in stack.events.of(pid) if e.type is EventType.PROXY_BOOTING]
    assert event.data == EventData(
        from_="provisioning", gen=booting.gen, zone="us-b", from_zone="us-a"
    )

    got = await stack.admin.get(f"/v1/proxies/{pid}")
    assert got.status_code == 200
    assert (got.json()["zone"], got.json()["host"]) == ("us-b", vm["natIP"])
    listed = await stack.admin.get("/v1/proxies", params={"zone": "us-b"})
    assert [p["id"] for p in listed.json()["items"]] == [pid]
    listed = await stack.admin.get("/v1/proxies", params={"zone": "us-a"})
    assert listed.json()["items"] == []

    await stack.registry.transition(pid, Phase.READY, last_ok_at=time.time())  # health's probe
    refused = await stack.client.post(
        "/v1/leases", json={"provider": stack.provider, "zone": "us-a", "ttl": 30}
    )
    assert refused.status_code == 503, refused.text
    granted = await stack.client.post(
        "/v1/leases", json={"provider": stack.provider, "zone": "us-b", "ttl": 30}
    )
    assert granted.status_code == 201, granted.text
    proxy = granted.json()["proxy"]
    assert (proxy["id"], proxy["zone"], proxy["host"]) == (pid, "us-b", vm["natIP"])


async def test_a_proxy_created_where_it_asked_keeps_its_zone(fake_gce: Any, stack: Stack) -> None:
    made = await stack.admin.post("/v1/proxies", json={"provider": stack.provider, "zone": "eu"})
    assert made.status_code == 202, made.text
    pid = made.json()["items"][0]["id"]
    booting = await wait_for_phase(stack.registry, pid, Phase.BOOTING, within=30.0)
    assert (booting.zone, booting.resource_id.split("/")[0]) == ("eu", "europe-west1-b")

    async def announced() -> bool:
        return EventType.PROXY_BOOTING in stack.events.types_of(pid)

    await wait_until(announced, 10.0, "the proxy.booting event")
    [event] = [e for e in stack.events.of(pid) if e.type is EventType.PROXY_BOOTING]
    assert (event.data.zone, event.data.from_zone) == (None, None)
