"""The pool operator's Role (deploy/kubernetes/core/pool-operator-role.yaml) grants exactly
what the operator uses: it runs against the fake API server through a ProxyPool's whole
life (journey.py) and a refused spec, the fake records every call with its client's
User-Agent, and the operator's calls (kopf's and its own) must be covered by the Role,
every grant of which must have been used, with no wildcard and nothing outside its
namespace (the Role is namespaced)."""

from __future__ import annotations

from pathlib import Path

import yaml
from tests.k8s.fake_kube import FakeKube
from tests.pool_operator.harness import OperatorFactory, Pools, eventually
from tests.pool_operator.journey import proxypool_journey

from proxyfleet.common.store import PoolStore, ProxyRegistry
from proxyfleet.pool_operator.kube import USER_AGENT

ROLE_FILE = Path(__file__).parents[2] / "deploy" / "kubernetes" / "core" / "pool-operator-role.yaml"
OPERATOR_AGENTS = ("kopf/", USER_AGENT)


def role_grants() -> set[tuple[str, str, str]]:
    """(API group, verb, resource) of the Role's rules; AssertionError on a wildcard."""
    [role] = [d for d in yaml.safe_load_all(ROLE_FILE.read_text()) if d["kind"] == "Role"]
    grants: set[tuple[str, str, str]] = set()
    for rule in role["rules"]:
        assert "resourceNames" not in rule, rule
        for word in (*rule["apiGroups"], *rule["verbs"], *rule["resources"]):
            assert "*" not in word, f"wildcard in {rule}"
        grants |= {(g, v, r) for g in rule["apiGroups"] for v in rule["verbs"]
                   for r in rule["resources"]}  # fmt: skip
    return grants


async def test_the_role_grants_exactly_what_the_operator_uses(
    fake_api: FakeKube,
    operators: OperatorFactory,
    pools: Pools,
    store: PoolStore,
    registry: ProxyRegistry,
) -> None:
    grants = role_grants()
    op = operators.start()
    await op.wait_ready()
    await proxypool_journey(pools, store, registry, "eu")
    pools.apply("bad", {"provider": "nowhere", "size": 1})

    async def refused() -> bool:
        return ("Warning", "InvalidSpec", "bad") in pools.events()

    await eventually("the refusal told", refused)
    pools.delete("bad")
    await eventually("bad released", lambda: _gone(pools, "bad"))
    assert op.stop() == 0
    calls = [c for c in fake_api.calls if c.agent.startswith(OPERATOR_AGENTS)]
    outside = {(c.verb, c.resource, c.namespace) for c in calls if c.resource and
               c.namespace != pools.namespace}  # fmt: skip
    assert not outside, f"calls outside its namespace: {sorted(outside)}"
    assert not [c for c in calls if c.code in (401, 403)]
    used = {(c.group, c.verb, c.resource) for c in calls if c.resource}
    print(f"\nverbs used: {sorted(used)}")
    assert used <= grants, f"used but not granted: {sorted(used - grants)}"
    assert grants <= used, f"granted but never used: {sorted(grants - used)}"


async def _gone(pools: Pools, name: str) -> bool:
    return pools.get(name) is None
