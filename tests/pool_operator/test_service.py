"""The operator as a service: its start (credentials it cannot read: exit 2; no CRD yet:
not ready, and serving once it is there), a restart (what changed meanwhile is handled),
and a long delete (the resource says what it waits for)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from kubernetes import client
from tests.k8s.fake_kube import FakeKube
from tests.pool_operator.harness import SCRIPT, OperatorFactory, Pools, eventually
from tests.pool_operator.journey import make_member

from proxyfleet.common.store import Fence, PoolStore, ProxyRegistry
from proxyfleet.common.wire.models import Phase
from proxyfleet.pool_operator import crd


async def test_credentials_it_cannot_read_stop_it_with_exit_2(tmp_path: Path) -> None:
    providers = tmp_path / "providers.yaml"
    providers.write_text("providers:\n  - {name: local, type: local, zones: [a], local: {}}\n")
    proc = await asyncio.create_subprocess_exec(
        SCRIPT, "--kubeconfig", str(tmp_path / "missing"), "--providers-config", str(providers),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 2
    assert err.decode().startswith(
        f"proxyfleet-pool-operator: cannot load the kubeconfig {tmp_path / 'missing'}"
    )


async def test_it_waits_for_the_crd_not_ready_then_serves(
    fake_api: FakeKube, api_client: client.ApiClient, operators: OperatorFactory, store: PoolStore
) -> None:
    ext: object = client.ApiextensionsV1Api(api_client)
    ext.delete_custom_resource_definition(crd.NAME)  # type: ignore[attr-defined]
    op = operators.start()

    async def waiting() -> str | None:
        code, text = await op.readyz()
        return text if code == 503 and "CRD is not installed" in text else None

    text = await eventually("not ready for want of the CRD", waiting, within=30)
    assert f"operator: not ready (the {crd.NAME} CRD is not installed" in text
    assert op.events("pool_operator.waiting")
    ext.create_custom_resource_definition(crd.crd())  # type: ignore[attr-defined]
    await op.wait_ready()
    Pools(api_client, "team-a").apply("eu", {"provider": "local", "size": 1})
    await eventually("the pool declared", lambda: store.get("eu"))
    assert op.stop() == 0


async def test_a_restart_handles_what_changed_meanwhile(
    operators: OperatorFactory, pools: Pools, store: PoolStore
) -> None:
    first = operators.start()
    await first.wait_ready()
    pools.apply("kept", {"provider": "local", "size": 1})
    pools.apply("dropped", {"provider": "local", "size": 1})
    await eventually("both declared", lambda: _both(store, "kept", "dropped"))
    assert first.stop() == 0
    # While it is down: one resized, one deleted (its finalizer holds it), one created.
    pools.apply("kept", {"provider": "local", "size": 3})
    pools.delete("dropped")
    pools.apply("new", {"provider": "local", "size": 2})
    assert pools.get("dropped") is not None
    second = operators.start()
    await second.wait_ready()

    async def resized() -> bool:
        found = await store.get("kept")
        return found is not None and found.spec.size == 3

    await eventually("kept resized", resized)
    await eventually("new declared", lambda: store.get("new"))

    async def dropped_deleting() -> bool:
        found = await store.get("dropped")
        return found is not None and found.deleting

    await eventually("dropped being deleted", dropped_deleting)
    assert await store.remove_if_empty("dropped", Fence("", ""))

    async def gone() -> bool:
        return pools.get("dropped") is None

    await eventually("dropped released", gone)
    assert second.stop() == 0


async def test_a_long_delete_says_what_it_waits_for(
    fake_api: FakeKube,
    operators: OperatorFactory,
    pools: Pools,
    store: PoolStore,
    registry: ProxyRegistry,
) -> None:
    op = operators.start()
    await op.wait_ready()
    pools.apply("eu", {"provider": "local", "size": 2})
    await eventually("declared", lambda: store.get("eu"))
    members = [await make_member(registry, f"eu-m{i}", "eu") for i in range(2)]
    pools.delete("eu")

    async def deleting() -> dict[str, object] | None:
        ready = pools.condition("eu") or {}
        return ready if ready.get("reason") == "Deleting" else None

    # --delete-wait 1: the handler hands back to kopf, which writes the status.
    ready = await eventually("the Deleting condition", deleting)
    assert ready["message"] == "2 members left to drain and delete"
    await registry.transition(members[0], Phase.DELETING)
    await registry.transition(members[0], Phase.DELETED)

    async def one_left() -> bool:
        return (pools.condition("eu") or {}).get("message") == "1 members left to drain and delete"

    await eventually("one member left", one_left)
    await registry.transition(members[1], Phase.DELETING)
    await registry.transition(members[1], Phase.DELETED)
    assert await store.remove_if_empty("eu", Fence("", ""))

    async def gone() -> bool:
        return pools.get("eu") is None

    await eventually("released", gone)
    assert op.stop() == 0
    # A wait is no failure: no Event says so, and no error was logged.
    assert [e for e in pools.events() if e[0] != "Normal"] == []
    assert not [line for line in op.lines() if line.get("level") == "error"], op.log_tail()


async def _both(store: PoolStore, a: str, b: str) -> bool:
    return await store.get(a) is not None and await store.get(b) is not None


def test_the_script_is_the_workspace_console_script() -> None:
    assert Path(SCRIPT).parent == Path(sys.executable).parent
    assert Path(SCRIPT).exists()
