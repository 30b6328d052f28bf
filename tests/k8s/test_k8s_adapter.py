"""The Kubernetes adapter against the fake API server (tests/k8s/fake_kube) with the real
client and a real Squid per pod: create → the pod IP (or the Service's address) → a real
authenticated CONNECT through it to the loopback target; adoption on 409; delete."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.contract.provider_contract import new_proxy_id
from tests.k8s.k8s_provider import (
    NAMESPACE,
    create_directly,
    eventually,
    fetch_through,
    live,
    of_proxy,
    opened,
    spec_for,
    until_ready,
)

from proxyfleet.common.core.errors import PermanentProviderError, TemporaryProviderError
from proxyfleet.provisioner_k8s.pure import manifests, names

INSTALLATION = "k8s-adapter"


def _one(fake: Any, resource: str, proxy_id: str) -> dict[str, Any]:
    [obj] = live(of_proxy(fake.objects(resource, NAMESPACE), proxy_id))
    return obj


async def test_create_returns_the_pod_ip_and_squid_takes_an_authenticated_connect(
    fake_kube: Any, tmp_path: Path, target: Any
) -> None:
    ports = [443, target.port]
    async with opened(fake_kube, tmp_path, INSTALLATION, connect_ports=ports) as provider:
        spec = spec_for(new_proxy_id(), INSTALLATION)
        done = await provider.create(spec)
        name = names.object_name(spec.proxy_id)
        assert done.host == fake_kube.pod_address(NAMESPACE, name)
        assert done.port == 3128
        assert done.resource_id == f"{NAMESPACE}/{name}"
        auth = (spec.username, spec.password)
        await until_ready(provider, spec.proxy_id)
        assert await fetch_through(done.host, done.port, auth, target) == 200
        assert await fetch_through(done.host, done.port, None, target) == 407
        assert await fetch_through(done.host, done.port, (spec.username, "wrong"), target) == 407

        pod = _one(fake_kube, "pods", spec.proxy_id)
        uid = pod["metadata"]["uid"]
        for resource in ("secrets", "configmaps"):
            obj = _one(fake_kube, resource, spec.proxy_id)
            assert obj["metadata"]["ownerReferences"] == [manifests.owner_reference(name, uid)]
        assert of_proxy(fake_kube.objects("services", NAMESPACE), spec.proxy_id) == []
        conf = _one(fake_kube, "configmaps", spec.proxy_id)["data"]["squid.conf"]
        assert "max_filedescriptors 1024" in conf.splitlines()
        assert "cache_mem 16 MB" in conf.splitlines()

        [listed] = [r for r in await provider.list_managed() if r.proxy_id == spec.proxy_id]
        assert (listed.host, listed.port, listed.zone) == (done.host, 3128, "default")
        assert (listed.username, listed.password) == auth
        assert listed.labels == spec.labels


async def test_a_second_create_adopts_the_pod_and_its_objects(
    fake_kube: Any, tmp_path: Path
) -> None:
    async with opened(fake_kube, tmp_path, INSTALLATION) as provider:
        spec = spec_for(new_proxy_id(), INSTALLATION)
        first = await provider.create(spec)
        before = len(fake_kube.calls)
        assert await provider.create(spec) == first
        again = [(c.verb, c.resource, c.code) for c in fake_kube.calls[before:]
                 if c.verb == "create"]  # fmt: skip
        assert again == [("create", r, 409) for r in ("pods", "secrets", "configmaps")]
        for resource in ("pods", "secrets", "configmaps"):
            assert len(live(of_proxy(fake_kube.objects(resource, NAMESPACE), spec.proxy_id))) == 1


async def test_a_secret_left_by_an_interrupted_create_is_adopted(
    fake_kube: Any, tmp_path: Path
) -> None:
    """The create died after the Secret (the ConfigMap's create answered 500): the retry
    meets the pod and the Secret as AlreadyExists, adopts both and finishes."""
    async with opened(fake_kube, tmp_path, INSTALLATION) as provider:
        spec = spec_for(new_proxy_id(), INSTALLATION)
        fake_kube.inject(500, verb="create", resource="configmaps", message="etcd hiccup")
        with pytest.raises(TemporaryProviderError, match="etcd hiccup"):
            await provider.create(spec)
        secret = _one(fake_kube, "secrets", spec.proxy_id)
        done = await provider.create(spec)
        assert done.host
        assert (
            _one(fake_kube, "secrets", spec.proxy_id)["metadata"]["uid"]
            == secret["metadata"]["uid"]
        )
        assert len(live(of_proxy(fake_kube.objects("pods", NAMESPACE), spec.proxy_id))) == 1


async def test_an_object_of_another_installation_is_never_adopted(
    fake_kube: Any, tmp_path: Path
) -> None:
    proxy_id = new_proxy_id()
    create_directly(fake_kube, "pods", {
        "metadata": {"name": names.object_name(proxy_id),
                     "labels": names.labels("someone-else", "cluster", proxy_id, {})},
        "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "1d"]}]},
    })  # fmt: skip
    async with opened(fake_kube, tmp_path, INSTALLATION) as provider:
        with pytest.raises(PermanentProviderError, match="not this installation's"):
            await provider.create(spec_for(proxy_id, INSTALLATION))
        await provider.delete(proxy_id, "")  # refuses to delete what is not ours
    assert len(live(of_proxy(fake_kube.objects("pods", NAMESPACE), proxy_id))) == 1


async def test_delete_takes_the_pod_and_every_object_with_it(
    fake_kube: Any, tmp_path: Path
) -> None:
    async with opened(fake_kube, tmp_path, INSTALLATION, expose="node_port") as provider:
        spec = spec_for(new_proxy_id(), INSTALLATION)
        done = await provider.create(spec)
        assert _one(fake_kube, "services", spec.proxy_id)
        await provider.delete(spec.proxy_id, done.resource_id)

        def nothing_left() -> bool:
            return not any(
                of_proxy(fake_kube.objects(r, NAMESPACE), spec.proxy_id)
                for r in ("pods", "secrets", "configmaps", "services")
            )

        await eventually(nothing_left)
        assert spec.proxy_id not in {r.proxy_id for r in await provider.list_managed()}


async def test_node_port_exposure_reaches_squid_on_the_node_address(
    fake_kube: Any, tmp_path: Path, target: Any
) -> None:
    ports = [443, target.port]
    async with opened(
        fake_kube, tmp_path, INSTALLATION, expose="node_port", connect_ports=ports
    ) as provider:
        spec = spec_for(new_proxy_id(), INSTALLATION)
        done = await provider.create(spec)
        service = _one(fake_kube, "services", spec.proxy_id)
        assert service["spec"]["type"] == "NodePort"
        assert (done.host, done.port) == ("127.0.0.1", service["spec"]["ports"][0]["nodePort"])
        # create returns at the pod IP, before Squid listens: the forwarder has nothing
        # to forward to until the pod is Ready (a client waits for health's ready).
        await until_ready(provider, spec.proxy_id)
        assert (
            await fetch_through(done.host, done.port, (spec.username, spec.password), target) == 200
        )


async def test_load_balancer_exposure_reaches_squid_on_the_ingress_address(
    fake_kube: Any, tmp_path: Path, target: Any
) -> None:
    ports = [443, target.port]
    async with opened(
        fake_kube, tmp_path, INSTALLATION, expose="load_balancer", connect_ports=ports
    ) as provider:
        spec = spec_for(new_proxy_id(), INSTALLATION)
        done = await provider.create(spec)
        service = _one(fake_kube, "services", spec.proxy_id)
        assert service["spec"]["type"] == "LoadBalancer"
        [ingress] = service["status"]["loadBalancer"]["ingress"]
        assert (done.host, done.port) == (ingress["ip"], 3128)
        await until_ready(provider, spec.proxy_id)
        assert (
            await fetch_through(done.host, done.port, (spec.username, spec.password), target) == 200
        )


async def test_a_zone_with_a_node_label_pins_its_pods(fake_kube: Any, tmp_path: Path) -> None:
    async with opened(fake_kube, tmp_path, INSTALLATION) as provider:
        spec = spec_for(new_proxy_id(), INSTALLATION, zone="eu")
        await provider.create(spec)
        pod = _one(fake_kube, "pods", spec.proxy_id)
        assert pod["spec"]["nodeSelector"] == {"topology.kubernetes.io/zone": "europe-west1-b"}
