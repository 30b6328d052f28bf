"""One look at a ProxyPool against the pools store (Reconciler), without kopf or an API
server: what the store ends up holding, and the status and finding each case gives (the
store and clock of conftest.py: a clean Redis, real time)."""

from __future__ import annotations

from typing import Any

import pytest

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.domain.pool_spec import Owner, PoolSpec, PoolStatus
from proxyfleet.common.providers import parse_providers_config
from proxyfleet.common.store import Fence, PoolStore
from proxyfleet.pool_operator.reconcile import Reconciler

CONFIG = parse_providers_config(
    "providers:\n  - {name: local, type: local, zones: [local-a], max_proxies: 20, local: {}}\n",
    "providers.yaml",
)
SPEC = {"provider": "local", "size": 2}


@pytest.fixture
def reconciler(store: PoolStore, clock: Clock) -> Reconciler:
    return Reconciler(store, CONFIG, clock)


def reason(status: dict[str, Any]) -> str:
    ready = [c for c in status["conditions"] if c["type"] == "Ready"]
    return str(ready[0].get("reason", "")) if ready else ""


async def test_a_missing_pool_is_declared_and_an_unchanged_one_left_alone(
    reconciler: Reconciler, store: PoolStore
) -> None:
    first = await reconciler.declare("team-a", "eu", SPEC, 1, {})
    assert (first.applied, first.verdict) == (True, None)
    record = await store.get("eu")
    assert record is not None
    assert (record.owner, record.owner_ref, record.gen) == (Owner.KUBERNETES, "team-a/eu", 1)
    assert reason(first.status) == "AwaitingController"
    assert first.status["observedGeneration"] == 0  # the controller has not acted yet
    again = await reconciler.declare("team-a", "eu", SPEC, 1, first.status)
    assert not again.applied
    assert (await store.get("eu")) == record
    await store.write_status("eu", PoolStatus(desired=2, ready=2, observed_gen=1), 60)
    caught_up = await reconciler.declare("team-a", "eu", SPEC, 1, again.status)
    assert (caught_up.status["observedGeneration"], caught_up.status["ready"]) == (1, 2)
    changed = await reconciler.declare("team-a", "eu", {**SPEC, "size": 4}, 2, caught_up.status)
    assert changed.applied
    assert changed.status["observedGeneration"] == 1  # generation 2 not acted on yet
    assert ((await store.get("eu")) or pytest.fail("gone")).spec.size == 4


async def test_a_refused_spec_leaves_the_last_good_one(
    reconciler: Reconciler, store: PoolStore
) -> None:
    await reconciler.declare("team-a", "eu", SPEC, 1, {})
    before = await store.get("eu")
    bad = await reconciler.declare("team-a", "eu", {**SPEC, "zones": ["local-z"]}, 2, {})
    assert bad.verdict is not None
    assert (bad.verdict.reason, bad.applied) == ("InvalidSpec", False)
    assert bad.verdict.message.startswith("spec.zones[0]: zone 'local-z' is served by none")
    assert bad.status["observedGeneration"] == 2
    assert await store.get("eu") == before


async def test_another_owner_and_a_pool_being_deleted_are_left_alone(
    reconciler: Reconciler, store: PoolStore
) -> None:
    await store.apply("api-pool", PoolSpec(provider="local", size=1), Owner.API)
    theirs = await reconciler.declare("team-a", "api-pool", SPEC, 1, {})
    assert theirs.verdict is not None
    assert theirs.verdict.reason == "OwnerConflict"
    assert (theirs.status["owner"], theirs.status["desired"]) == ("api", 0)
    await reconciler.declare("team-a", "eu", SPEC, 1, {})
    other_ns = await reconciler.declare("team-b", "eu", SPEC, 1, {})
    assert other_ns.verdict is not None
    assert "Kubernetes resource team-a/eu" in other_ns.verdict.message
    await store.delete("eu", Owner.KUBERNETES)
    again = await reconciler.declare("team-a", "eu", {**SPEC, "size": 3}, 2, {})
    assert again.verdict is not None
    assert again.verdict.reason == "PoolDeleting"
    assert ((await store.get("eu")) or pytest.fail("gone")).spec.size == 2


async def test_release_asks_for_the_delete_and_waits_for_the_pool_to_go(
    reconciler: Reconciler, store: PoolStore
) -> None:
    await reconciler.declare("team-a", "eu", SPEC, 1, {})
    waiting = await reconciler.release("team-a", "eu", 1, {}, keep_proxies=False)
    assert (waiting.gone, waiting.members) == (False, 0)
    assert waiting.status is not None
    assert reason(waiting.status) == "Deleting"
    assert ((await store.get("eu")) or pytest.fail("gone")).deleting
    assert await store.remove_if_empty("eu", Fence("", ""))
    assert (await reconciler.release("team-a", "eu", 1, {}, keep_proxies=False)).gone
    # Another's pool, or none: nothing to wait for.
    await store.apply("api-pool", PoolSpec(provider="local", size=1), Owner.API)
    assert (await reconciler.release("team-a", "api-pool", 1, {}, keep_proxies=False)).gone
    assert await store.get("api-pool") is not None
    await reconciler.declare("team-a", "kept", SPEC, 1, {})
    assert (await reconciler.release("team-a", "kept", 1, {}, keep_proxies=True)).gone
    assert await store.get("kept") is None
