"""A ProxyPool's life through a running operator, against any API server (the fake here,
a real cluster in tests/k8s/integration): applied → the pool in Redis, owned by the
resource; the controller's status → the resource's status; scaled through the scale
subresource → the size in Redis; deleted → the finalizer holds the resource while the pool
has members, and lets it go once the controller's last step removed the pool.

The pool controller is played by the test (it is another service): it writes a status
with PoolStore.write_status and, on delete, takes the members to deleted with registry
transitions and removes the empty pool (PoolStore.remove_if_empty)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from tests.pool_operator.harness import Pools, eventually

from proxyfleet.common.domain.pool_spec import POOL_LABEL, Condition, Owner, PoolStatus
from proxyfleet.common.store import Fence, PoolStore, ProxyRegistry
from proxyfleet.common.wire.models import Phase, Proxy


@dataclass(frozen=True)
class Figures:
    declared_s: float
    """From the resource's create to the pool in Redis."""
    status_s: float
    """From the controller's status in Redis to the resource's status."""
    scaled_s: float
    """From the scale subresource's write to the size in Redis."""
    released_s: float
    """From the pool's removal to the resource gone."""


async def proxypool_journey(
    pools: Pools, store: PoolStore, registry: ProxyRegistry, name: str
) -> Figures:
    ref = f"{pools.namespace}/{name}"
    start = time.monotonic()
    made = pools.apply(name, {"provider": "local", "size": 2, "zones": ["local-a"]})
    record = await eventually("the pool in Redis", lambda: store.get(name))
    declared = time.monotonic() - start
    assert (record.owner, record.owner_ref, record.spec.size) == (Owner.KUBERNETES, ref, 2)
    assert record.spec.zones == ["local-a"]

    # The controller reports: the status follows, with the resource's own generation.
    start = time.monotonic()
    await store.write_status(name, _status(record.gen, desired=2, ready=2, leased=1), ttl=600)

    async def status_written() -> dict[str, object] | None:
        s = pools.status(name)
        return s if s.get("ready") == 2 else None

    status = await eventually("the status written back", status_written)
    status_s = time.monotonic() - start
    assert status["leased"] == 1
    assert status["owner"] == "kubernetes"
    assert status["ownerRef"] == ref
    assert status["observedGeneration"] == made["metadata"]["generation"]
    ready = pools.condition(name) or {}
    assert (ready.get("status"), ready.get("reason")) == ("True", "Ready")
    assert pools.get_scale(name)["status"] == {"replicas": 2, "selector": f"{POOL_LABEL}={name}"}

    # Scaled through the scale subresource: a spec change, declared at once.
    start = time.monotonic()
    assert pools.scale(name, 5)["spec"]["replicas"] == 5

    async def resized() -> bool:
        found = await store.get(name)
        return found is not None and found.spec.size == 5

    await eventually("the size in Redis", resized)
    scaled = time.monotonic() - start

    # Deleted: the pool is asked to go; its members hold the resource (the finalizer).
    members = [await make_member(registry, f"{name}-m{i}", name) for i in range(2)]
    pools.delete(name)

    async def deleting() -> bool:
        found = await store.get(name)
        return found is not None and found.deleting

    await eventually("the pool being deleted", deleting)
    held = pools.get(name)
    assert held is not None, "the resource went before its pool"
    assert held["metadata"].get("deletionTimestamp")
    assert "proxyfleet.io/pool" in held["metadata"]["finalizers"]
    for member in members:  # the controller drains and deletes them...
        await registry.transition(member, Phase.DELETING)
        await registry.transition(member, Phase.DELETED)
    assert pools.get(name) is not None  # ...and the pool is still there until its last step
    assert await store.remove_if_empty(name, Fence("", ""))
    start = time.monotonic()

    async def gone() -> bool:
        return pools.get(name) is None

    await eventually("the resource gone", gone)
    return Figures(declared, status_s, scaled, time.monotonic() - start)


def _status(gen: int, *, desired: int, ready: int, leased: int) -> PoolStatus:
    return PoolStatus(
        desired=desired,
        ready=ready,
        leased=leased,
        free=ready - leased,
        observed_gen=gen,
        updated_at=time.time(),
        controller="journey",
        conditions=[Condition(type="Ready", status=True, reason="Ready", since=time.time())],
    )


async def make_member(registry: ProxyRegistry, proxy_id: str, pool: str) -> str:
    """A ready member of `pool`, as the controller's creates make them."""
    now = time.time()
    proxy = Proxy(
        id=proxy_id, provider="local", zone="local-a", phase=Phase.PENDING, gen=0,
        username="u", password="secret-pw", created_at=now, updated_at=now, pool=pool,
        labels={POOL_LABEL: pool},
    )  # fmt: skip
    assert await registry.create(proxy)
    await registry.transition(proxy_id, Phase.PROVISIONING)
    await registry.transition(proxy_id, Phase.BOOTING, host="127.0.0.1", port=3128)
    await registry.transition(proxy_id, Phase.READY, last_ok_at=now)
    return proxy_id
