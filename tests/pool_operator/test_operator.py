"""The real proxyfleet-pool-operator against the fake API server and a real Redis: a
ProxyPool's whole life (journey.py), and how each of its parts behaves."""

from __future__ import annotations

from tests.k8s.fake_kube import FakeKube
from tests.pool_operator.harness import OperatorFactory, Pools
from tests.pool_operator.journey import proxypool_journey

from proxyfleet.common.store import PoolStore, ProxyRegistry


async def test_a_proxypool_is_declared_reported_scaled_and_released(
    fake: FakeKube,
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
