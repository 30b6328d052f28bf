"""Builders shared by the store tests."""

from __future__ import annotations

from proxyfleet.common.clock import ManualClock
from proxyfleet.common.models import Phase, Proxy
from proxyfleet.common.store import ProxyRegistry


def make_proxy(pid: str, clock: ManualClock, **kw: object) -> Proxy:
    fields: dict[str, object] = {
        "id": pid,
        "provider": "local",
        "zone": "zone-a",
        "phase": Phase.PENDING,
        "gen": 0,
        "username": "u",
        "password": "secret",
        "created_at": clock.now(),
        "updated_at": clock.now(),
    }
    fields.update(kw)
    return Proxy(**fields)  # type: ignore[arg-type]


async def make_ready(registry: ProxyRegistry, proxy: Proxy) -> None:
    assert await registry.create(proxy)
    await registry.transition(proxy.id, Phase.PROVISIONING)
    await registry.transition(proxy.id, Phase.BOOTING, host="127.0.0.1", port=3128)
    await registry.transition(proxy.id, Phase.READY, last_ok_at=proxy.created_at)
