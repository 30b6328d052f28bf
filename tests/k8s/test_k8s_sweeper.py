"""The sweeper: this installation's Secrets, ConfigMaps and Services whose pod is gone are
deleted once older than the minimum age, never younger ones, a live proxy's, or another
installation's."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.contract.provider_contract import new_proxy_id
from tests.k8s.k8s_provider import (
    FAST,
    NAMESPACE,
    PROVIDER,
    create_directly,
    kubeconfig_for,
    live,
    of_proxy,
    settings_for,
    spec_for,
)

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.provisioner_k8s.adapter import K8sProvider
from proxyfleet.provisioner_k8s.pure import names

INSTALLATION = "k8s-sweep"


def _leftovers(fake: Any, proxy_id: str, installation: str) -> None:
    """What a provisioner that died mid-create or mid-delete leaves: no pod, no owner."""
    meta = {"name": names.object_name(proxy_id),
            "labels": names.labels(installation, PROVIDER, proxy_id, {})}  # fmt: skip
    create_directly(fake, "secrets", {"metadata": meta})
    create_directly(fake, "configmaps", {"metadata": meta, "data": {"a": "b"}})
    create_directly(fake, "services", {
        "metadata": meta,
        "spec": {"type": "NodePort", "ports": [{"port": 3128, "targetPort": 3128}],
                 "selector": {names.LABEL_PROXY: proxy_id}},
    })  # fmt: skip


def _count(fake: Any, proxy_id: str) -> int:
    return sum(
        len(live(of_proxy(fake.objects(r, NAMESPACE), proxy_id)))
        for r in ("secrets", "configmaps", "services")
    )


async def test_orphans_go_after_the_minimum_age_only(fake_kube: Any, tmp_path: Path) -> None:
    clock = ManualClock(time.time())
    provider = K8sProvider(
        settings_for(kubeconfig_for(fake_kube, tmp_path)), INSTALLATION, PROVIDER,
        clock=clock, tuning=FAST,
    )  # fmt: skip
    try:
        alive = spec_for(new_proxy_id(), INSTALLATION)
        await provider.create(alive)
        orphan, foreign = new_proxy_id(), new_proxy_id()
        _leftovers(fake_kube, orphan, INSTALLATION)
        _leftovers(fake_kube, foreign, "someone-else")
        assert _count(fake_kube, orphan) == 3

        await provider.list_managed()  # younger than sweep_min_age (60 s): kept
        assert _count(fake_kube, orphan) == 3
        assert provider.sweeper.last_report == []

        clock.advance(FAST.sweep_min_age + 30)  # past the age of objects made just now
        listed = await provider.list_managed()
        assert {r.proxy_id for r in listed} == {alive.proxy_id}
        assert sorted(o.resource for o in provider.sweeper.last_report) == [
            "configmaps",
            "secrets",
            "services",
        ]
        assert _count(fake_kube, orphan) == 0
        assert _count(fake_kube, foreign) == 3
        assert _count(fake_kube, alive.proxy_id) == 2  # its Secret and ConfigMap stay
    finally:
        await provider.close()


async def test_a_dry_run_only_reports(fake_kube: Any, tmp_path: Path) -> None:
    clock = ManualClock(time.time() + 3600)
    tuning = type(FAST)(sweep_interval=0.01, sweep_min_age=60.0, sweep_dry_run=True)
    provider = K8sProvider(
        settings_for(kubeconfig_for(fake_kube, tmp_path)), INSTALLATION, PROVIDER,
        clock=clock, tuning=tuning,
    )  # fmt: skip
    try:
        orphan = new_proxy_id()
        _leftovers(fake_kube, orphan, INSTALLATION)
        await provider.list_managed()
        assert {o.proxy_id for o in provider.sweeper.last_report} == {orphan}
        assert _count(fake_kube, orphan) == 3
    finally:
        await provider.close()
