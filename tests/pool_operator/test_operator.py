"""The real proxyfleet-pool-operator against the fake API server and a real Redis: a
ProxyPool's whole life (journey.py), and how each of its parts behaves."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.k8s.fake_kube import Call, FakeKube
from tests.pool_operator.harness import OperatorFactory, Pools, eventually
from tests.pool_operator.journey import make_member, proxypool_journey

from proxyfleet.common.domain.pool_spec import Owner, PoolSpec, PoolStatus
from proxyfleet.common.store import Fence, PoolStore, ProxyRegistry
from proxyfleet.common.wire.models import Phase
from proxyfleet.pool_operator.handlers import KEEP_PROXIES
from proxyfleet.pool_operator.operator import ANNOTATIONS


async def test_a_proxypool_is_declared_reported_scaled_and_released(
    fake_api: FakeKube,
    operators: OperatorFactory,
    pools: Pools,
    store: PoolStore,
    registry: ProxyRegistry,
) -> None:
    op = operators.start()
    await op.wait_ready()
    figures = await proxypool_journey(pools, store, registry, "eu")
    print(f"\njourney against the fake: {figures}")
    assert op.stop() == 0
    assert op.events("pool_operator.applied")
    assert op.events("pool_operator.released")
    assert not op.events("service.component_failed"), op.log_tail()


async def test_a_spec_the_checks_refuse_gets_a_condition_and_changes_nothing(
    operators: OperatorFactory, pools: Pools, store: PoolStore
) -> None:
    op = operators.start()
    await op.wait_ready()
    pools.apply("eu", {"provider": "local", "size": 50})  # max_proxies is 20

    async def refused() -> dict[str, Any] | None:
        ready = pools.condition("eu")
        return ready if ready and ready.get("reason") == "InvalidSpec" else None

    ready = await eventually("the InvalidSpec condition", refused)
    assert ready["status"] == "False"
    assert (
        ready["message"] == "spec.size: 50 members need more than the providers' max_proxies (20)"
    )
    assert pools.status("eu")["observedGeneration"] == 1
    assert await store.get("eu") is None
    await eventually("a Warning event", lambda: _has_event(pools, ("Warning", "InvalidSpec", "eu")))
    # Fixed, it is declared; the operator said so once, not at every look.
    pools.apply("eu", {"provider": "local", "size": 5})
    record = await eventually("the pool in Redis", lambda: store.get("eu"))
    assert record.spec.size == 5

    async def awaiting() -> bool:
        return (pools.condition("eu") or {}).get("reason") == "AwaitingController"

    await eventually("the controller awaited", awaiting)
    assert pools.status("eu")["observedGeneration"] == 1  # the controller has not acted yet
    assert len(op.events("pool_operator.refused")) == 1
    assert op.stop() == 0


async def test_a_spec_the_crd_schema_refuses_never_reaches_the_operator(
    fake_api: FakeKube, pools: Pools
) -> None:
    with pytest.raises(ApiException) as exc:
        pools.apply("eu", {"provider": "local", "size": -1})
    assert exc.value.status == 422
    body = json.loads(exc.value.body or "{}")
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: -1: spec.size in body should be greater than or equal to 0",
            "field": "spec.size",
        }
    ]
    assert pools.get("eu") is None


async def test_a_name_owned_elsewhere_is_a_conflict_and_the_pool_is_untouched(
    operators: OperatorFactory, api_client: client.ApiClient, store: PoolStore
) -> None:
    api_owned = PoolSpec(provider="local", size=3)
    await store.apply("us", api_owned, Owner.API)
    op = operators.start("--watch-namespaces", "team-a,team-b")
    await op.wait_ready()
    team_a, team_b = Pools(api_client, "team-a"), Pools(api_client, "team-b")
    team_a.apply("us", {"provider": "local", "size": 1})
    team_a.apply("eu", {"provider": "local", "size": 2})
    await eventually("eu declared", lambda: store.get("eu"))
    team_b.apply("eu", {"provider": "local", "size": 4})

    async def conflict(pools: Pools, name: str) -> dict[str, Any] | None:
        ready = pools.condition(name)
        return ready if ready and ready.get("reason") == "OwnerConflict" else None

    theirs = await eventually("us refused", lambda: conflict(team_a, "us"))
    assert theirs["message"] == "pool us is declared by the API: change or delete it there"
    assert (team_a.status("us")["owner"], team_a.status("us")["ready"]) == ("api", 0)
    same_name = await eventually("team-b's eu refused", lambda: conflict(team_b, "eu"))
    assert same_name["message"] == (
        "pool eu is declared by the Kubernetes resource team-a/eu: change or delete it there"
    )
    us = await store.get("us")
    eu = await store.get("eu")
    assert us is not None
    assert (us.owner, us.spec) == (Owner.API, api_owned)
    assert eu is not None
    assert (eu.owner_ref, eu.spec.size) == ("team-a/eu", 2)
    # Once team-a's pool is gone, team-b's resource declares it (level-triggered).
    team_a.delete("eu")
    await eventually("eu deleting", lambda: _deleting(store, "eu"))
    assert await store.remove_if_empty("eu", Fence("", ""))

    async def taken_over() -> bool:
        found = await store.get("eu")
        return found is not None and found.owner_ref == "team-b/eu" and found.spec.size == 4

    await eventually("team-b's eu declared", taken_over)
    await eventually("team-a's eu released", lambda: _gone(team_a, "eu"))
    # A resource whose pool is another's lets go at once: the pool stays theirs.
    team_a.delete("us")
    await eventually("team-a's us released", lambda: _gone(team_a, "us"))
    assert (await store.get("us")) == us
    assert op.stop() == 0


async def test_a_redis_reset_brings_the_pool_back(
    operators: OperatorFactory, pools: Pools, store: PoolStore, redis_client: aioredis.Redis
) -> None:
    op = operators.start()
    await op.wait_ready()
    pools.apply("eu", {"provider": "local", "size": 3, "max_age": 21600})
    await eventually("the pool in Redis", lambda: store.get("eu"))
    # kopf runs the create handler and the timer's first look at once: the later of the two
    # would declare a pool flushed meanwhile too. Flush once the create is handled (kopf's
    # diff-base annotation written), so that only the timer can bring the pool back.
    await eventually("the create handled", lambda: _create_handled(pools, "eu"))
    told = len(op.events("pool_operator.applied"))
    await redis_client.flushdb()
    start = time.monotonic()
    record = await eventually("the pool back", lambda: store.get("eu"), within=5)
    print(f"\nback {time.monotonic() - start:.2f} s after FLUSHDB (status interval 0.3 s)")
    assert (record.owner, record.owner_ref, record.spec.size) == (Owner.KUBERNETES, "team-a/eu", 3)
    assert record.spec.max_age == 21600
    causes = {e["cause"] for e in op.events("pool_operator.applied")[told:]}
    assert causes == {"timer"}, op.log_tail()
    assert op.stop() == 0


async def test_kubectl_scale_changes_the_size(
    fake_api: FakeKube, operators: OperatorFactory, pools: Pools, store: PoolStore, tmp_path: Path
) -> None:
    op = operators.start()
    await op.wait_ready()
    pools.apply("eu", {"provider": "local", "size": 2})
    await eventually("the pool in Redis", lambda: store.get("eu"))
    kubeconfig = fake_api.write_kubeconfig(tmp_path / "kubectl-config", namespace="team-a")
    kubectl = str(Path(sys.executable).parent / "kubectl")
    proc = await asyncio.create_subprocess_exec(
        kubectl, "--kubeconfig", str(kubeconfig), "scale", "proxypool/eu", "--replicas", "7",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert out.decode().strip() == "proxypool.proxyfleet.io/eu scaled"

    async def scaled() -> bool:
        found = await store.get("eu")
        return found is not None and found.spec.size == 7

    await eventually("size 7 in Redis", scaled)
    assert op.stop() == 0


async def test_keep_proxies_removes_the_pool_at_once_and_leaves_its_members(
    operators: OperatorFactory, pools: Pools, store: PoolStore, registry: ProxyRegistry
) -> None:
    op = operators.start()
    await op.wait_ready()
    pools.apply("eu", {"provider": "local", "size": 1}, annotations={KEEP_PROXIES: "true"})
    await eventually("the pool in Redis", lambda: store.get("eu"))
    member = await make_member(registry, "eu-m0", "eu")
    pools.delete("eu")
    await eventually("the resource gone", lambda: _gone(pools, "eu"))
    assert await store.get("eu") is None
    kept = await registry.get(member)
    assert kept is not None
    assert kept.phase is Phase.READY
    assert (kept.pool, kept.labels) == ("", {})
    assert op.events("pool_operator.released")[0]["keep_proxies"] is True
    assert op.stop() == 0


async def test_an_idle_pool_costs_no_api_writes(
    fake_api: FakeKube, operators: OperatorFactory, pools: Pools, store: PoolStore
) -> None:
    op = operators.start()
    await op.wait_ready()
    pools.apply("eu", {"provider": "local", "size": 2})
    record = await eventually("the pool in Redis", lambda: store.get("eu"))
    await store.write_status("eu", PoolStatus(desired=2, ready=2, observed_gen=record.gen), 600)
    await eventually("the status written", lambda: _ready_count(pools, "eu", 2))
    writes = len(_writes(fake_api))
    # Ten looks at 0.3 s each: nothing changed, nothing written.
    await asyncio.sleep(3)
    assert _writes(fake_api)[writes:] == []
    await store.write_status("eu", PoolStatus(desired=2, ready=1, observed_gen=record.gen), 600)
    await eventually("the new count", lambda: _ready_count(pools, "eu", 1))
    assert [c.resource for c in _writes(fake_api)[writes:]] == ["proxypools/status"]
    assert op.stop() == 0


def _writes(fake_api: FakeKube) -> list[Call]:
    return [
        c for c in fake_api.calls if c.group == "proxyfleet.io" and c.verb in ("patch", "update")
    ]


async def _ready_count(pools: Pools, name: str, ready: int) -> bool:
    return pools.status(name).get("ready") == ready


async def _has_event(pools: Pools, wanted: tuple[str, str, str]) -> bool:
    return wanted in pools.events()


async def _deleting(store: PoolStore, name: str) -> bool:
    found = await store.get(name)
    return found is not None and found.deleting


async def _gone(pools: Pools, name: str) -> bool:
    return pools.get(name) is None


async def test_two_replicas_at_once_repeat_each_other_harmlessly(
    operators: OperatorFactory, pools: Pools, store: PoolStore, registry: ProxyRegistry
) -> None:
    """Production runs two (standalone: no peering): both act on every resource."""
    first, second = operators.start(), operators.start()
    await first.wait_ready()
    await second.wait_ready()
    await proxypool_journey(pools, store, registry, "eu")
    first.proc.kill()  # one dies: the other goes on, with no failover to wait for
    first.proc.wait()
    pools.apply("us", {"provider": "local", "size": 1})
    await eventually("us declared by the survivor", lambda: store.get("us"))
    assert second.stop() == 0
    for op in (first, second):
        errors = [line for line in op.lines() if line.get("level") == "error"]
        assert errors == [], op.log_tail()


async def _create_handled(pools: Pools, name: str) -> bool:
    resource = pools.get(name) or {}
    annotations = resource.get("metadata", {}).get("annotations") or {}
    return f"{ANNOTATIONS}/last-handled-spec" in annotations
