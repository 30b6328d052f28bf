"""Shared by the API tests: serving an app in this loop, the event recorder, builders."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import msgspec
import redis.asyncio as aioredis
from litestar import Litestar
from nats.aio.msg import Msg

from proxyfleet.api.container import Services
from proxyfleet.api.settings import ApiSettings
from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.settings import CommonSettings
from proxyfleet.common.domain.pool_spec import POOL_LABEL
from proxyfleet.common.providers import ProvidersConfig, parse_providers_config
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.events import Event
from proxyfleet.common.wire.models import Phase, Proxy

ADMIN = "admin-token-for-tests"
CLIENT = "client-token-for-tests"
OTHER_CLIENT = "another-client-token-for-tests"
"""The bearer secrets; configured as `<name>:<secret>` with the names below."""
ADMIN_NAME, CLIENT_NAME, OTHER_CLIENT_NAME = "tests-admin", "tests-client", "tests-other"
PROVIDER = "apitest"
OTHER = "apitest2"
KVM = "apikvm"
CAPPED = "apicapped"
"""A provider with max_proxies: 4."""

PROVIDERS_YAML = f"""
providers:
  - name: {PROVIDER}
    type: local
    zones: [z1, z2]
    local: {{}}
  - name: {OTHER}
    type: local
    zones: [east]
    local: {{}}
  - name: {CAPPED}
    type: local
    zones: [c1]
    max_proxies: 4
    local: {{}}
  - name: {KVM}
    type: kvm
    zones: [k1]
    kvm:
      hosts:
        - {{name: hv1, zone: k1, ssh_address: 10.0.0.9, ssh_key_file: /k,
           host_key: "ssh-ed25519 AAAA"}}
      images:
        debian: {{url: "https://images.example/debian.qcow2"}}
      default_image: debian
"""


def providers_config() -> ProvidersConfig:
    return parse_providers_config(PROVIDERS_YAML, "providers.yaml")


def api_settings(redis_url: str, nats_url: str, **overrides: Any) -> ApiSettings:
    base = ApiSettings(
        common=CommonSettings(redis_url=redis_url, nats_url=nats_url),
        admin_tokens=(f"{ADMIN_NAME}:{ADMIN}",),
        client_tokens=(f"{CLIENT_NAME}:{CLIENT}", f"{OTHER_CLIENT_NAME}:{OTHER_CLIENT}"),
        cooldown=30.0,
        max_lease_ttl=600.0,
        default_lease_ttl=60.0,
        ban_seconds=100.0,
        sweep_interval=0.05,
    )
    return dataclasses.replace(base, **overrides)


@dataclass
class Api:
    """One running app: its URL, clients per scope, the clock it runs on, the registry."""

    url: str
    app: Litestar
    clock: ManualClock
    registry: ProxyRegistry
    admin: httpx.AsyncClient
    client: httpx.AsyncClient
    anon: httpx.AsyncClient
    other: httpx.AsyncClient
    """A second client token (another holder)."""

    @property
    def services(self) -> Services:
        services: Services = self.app.state.services
        return services


ApiFactory = Callable[..., Awaitable[Api]]
"""start_api(**settings overrides) -> a running Api."""


@dataclass
class Recorder:
    """Every message on a core NATS subject filter, in arrival order."""

    messages: list[tuple[str, bytes]] = field(default_factory=list)
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def on_msg(self, msg: Msg) -> None:
        self.messages.append((msg.subject, msg.data))
        self._arrived.set()

    def subjects(self) -> list[str]:
        return [s for s, _ in self.messages]

    def events(self, event_type: str | None = None) -> list[Event]:
        out = [msgspec.json.decode(data, type=Event) for _, data in self.messages]
        return [e for e in out if event_type is None or e.type == event_type]

    async def wait_for(
        self, predicate: Callable[[], bool], within: float = 5.0, what: str = ""
    ) -> None:
        deadline = time.monotonic() + within
        while not predicate():
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for {what}; seen: {self.subjects()}")
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), left)

    async def event(self, event_type: str, within: float = 5.0, **match: Any) -> Event:
        """The first event of that type whose fields equal `match` (waits for it)."""

        def found() -> Event | None:
            for e in self.events(event_type):
                if all(getattr(e, k) == v for k, v in match.items()):
                    return e
            return None

        await self.wait_for(lambda: found() is not None, within, f"{event_type} {match}")
        event = found()
        assert event is not None
        return event


async def ready_proxy(
    api: Api,
    pid: str,
    *,
    provider: str = PROVIDER,
    zone: str = "z1",
    labels: dict[str, str] | None = None,
    port: int = 3128,
    pool: str = "",
) -> Proxy:
    """A proxy made ready directly through the registry (what provisioner + health do);
    with `pool`, a member of it as the pool controller creates one (pool and label)."""
    now = api.clock.now()
    labels = {**(labels or {}), POOL_LABEL: pool} if pool else labels
    proxy = Proxy(
        id=pid,
        provider=provider,
        zone=zone,
        phase=Phase.PENDING,
        gen=0,
        username="user",
        password="s3cret-pass",
        created_at=now,
        updated_at=now,
        labels=labels or {},
        pool=pool,
    )
    assert await api.registry.create(proxy)
    await api.registry.transition(pid, Phase.PROVISIONING)
    await api.registry.transition(pid, Phase.BOOTING, host="127.0.0.1", port=port)
    await api.registry.transition(pid, Phase.READY, last_ok_at=now)  # health's good probe
    got = await api.registry.get(pid)
    assert got is not None
    return got


async def probed(api: Api, *pids: str) -> None:
    """A good probe of each proxy now, as health records it (after the clock moved on)."""
    for pid in pids:
        await api.registry.update(pid, last_ok_at=api.clock.now())


async def snapshot(client: aioredis.Redis) -> dict[str, Any]:
    """Every key and its value: proves a refused request changed nothing."""
    out: dict[str, Any] = {}
    keys = [str(k) for k in await client.keys("*")]
    for key in sorted(keys):
        kind = await client.type(key)
        if kind == "hash":
            out[key] = await client.hgetall(key)
        elif kind == "zset":
            out[key] = await client.zrange(key, 0, -1, withscores=True)
        else:
            out[key] = kind
    return out


def error_of(response: httpx.Response) -> str:
    """The error code of a JSON error body (and a check that the body has that shape)."""
    body = response.json()
    assert set(body) >= {"error", "message"}, body
    assert body["message"], body
    return str(body["error"])


async def until(predicate: Callable[[], Awaitable[bool]], within: float, what: str) -> None:
    """Wait until `predicate` holds (checked every 50 ms), at most `within` seconds."""
    deadline = time.monotonic() + within
    while not await predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)
