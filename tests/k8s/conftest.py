"""The fake Kubernetes API server (tests/k8s/fake_kube) as a fixture, the real client on
it, and helpers its tests share (a proxy's objects made in the provisioner's order, waits,
a raw CONNECT)."""

from __future__ import annotations

import base64
import json
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from tests.conftest import TargetServer
from tests.k8s.fake_kube import FakeKube, manifests

from proxyfleet.pool_operator import crd as pool_crd

T = TypeVar("T")

Core = Any
"""How tests hold a kubernetes.client.CoreV1Api: its models type every field as optional,
so tests read the answers untyped (as the JSON they are)."""


@pytest.fixture
def fake_kube(target: TargetServer) -> Iterator[FakeKube]:
    """A started fake per test; teardown stops every Squid and forwarder it started. It
    asks for `target` (what its Squids proxy to), so tests/conftest.py marks its tests
    `process`."""
    fake = FakeKube().start()
    try:
        yield fake
    finally:
        fake.close()


@pytest.fixture
def fake_kube_factory(target: TargetServer) -> Iterator[Callable[..., FakeKube]]:
    """Started fakes made with other arguments (`FakeKube(**kwargs)`, e.g. `now=`); all
    are closed at teardown."""
    made: list[FakeKube] = []

    def make(**kwargs: Any) -> FakeKube:
        fake = FakeKube(**kwargs).start()
        made.append(fake)
        return fake

    try:
        yield make
    finally:
        for fake in made:
            fake.close()


@pytest.fixture
def core_v1(fake_kube: FakeKube) -> Iterator[client.CoreV1Api]:
    """The real client's CoreV1Api on the fake."""
    api_client = client.ApiClient(fake_kube.configuration())
    try:
        yield client.CoreV1Api(api_client)
    finally:
        api_client.close()  # type: ignore[no-untyped-call]


NAMESPACE = "proxies"
USER, PASSWORD = "alice", "s3cret-pw"


def wait_for(predicate: Callable[[], T | None], within: float = 15.0, what: str = "") -> T:
    """Poll `predicate` until it returns something truthy (bounded in time)."""
    deadline = time.monotonic() + within
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within:g} s: {what or predicate}")
        time.sleep(0.02)


def to_json(model: Any) -> dict[str, Any]:
    """A client model as the JSON the API sent."""
    out = client.ApiClient().sanitize_for_serialization(model)  # type: ignore[no-untyped-call]
    assert isinstance(out, dict)
    return out


def condition(pod: Any, kind: str) -> str | None:
    for c in pod.status.conditions or []:
        if c.type == kind:
            return str(c.status)
    return None


def create_proxy(
    api: Core, proxy_id: str, target: TargetServer, *, namespace: str = NAMESPACE
) -> Any:
    """Pod first, then its ConfigMap and Secret owned by it (the provisioner's order)."""
    pod = api.create_namespaced_pod(namespace, manifests.squid_pod(proxy_id))
    owner = to_json(pod)
    conf = manifests.squid_config_map(proxy_id, owner, connect_ports=[target.port])
    api.create_namespaced_config_map(namespace, conf)
    api.create_namespaced_secret(
        namespace, manifests.htpasswd_secret(proxy_id, USER, PASSWORD, owner)
    )
    return pod


def wait_ready(api: Core, name: str, namespace: str = NAMESPACE, within: float = 30.0) -> Any:
    def ready() -> Any:
        pod = api.read_namespaced_pod(name, namespace)
        return pod if condition(pod, "Ready") == "True" else None

    return wait_for(ready, within, f"pod {name} Ready")


def connect_status(address: str, port: int, target_port: int, auth: tuple[str, str] | None) -> int:
    """The status code a proxy answers a CONNECT to 127.0.0.1:target_port with."""
    lines = [f"CONNECT 127.0.0.1:{target_port} HTTP/1.1", f"Host: 127.0.0.1:{target_port}"]
    if auth is not None:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        lines.append(f"Proxy-Authorization: Basic {token}")
    with socket.create_connection((address, port), timeout=10) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        status_line = s.makefile("rb").readline().decode()
    return int(status_line.split()[1])


def status_body(exc: ApiException) -> dict[str, Any]:
    """The Status object an ApiException carries."""
    body = json.loads(exc.body or "{}")
    assert isinstance(body, dict)
    assert body.get("kind") == "Status"
    return body


def new_watch() -> Any:
    """A kubernetes.watch.Watch (an untyped class)."""
    return watch.Watch()  # type: ignore[no-untyped-call]


# ---- custom resources (tests/k8s/test_fake_kube_crd*.py) ----


@pytest.fixture
def fake_api() -> Iterator[FakeKube]:
    """A fake with no pod to run (no target needed): CRDs and their resources only."""
    made = FakeKube().start()
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def api_client(fake_api: FakeKube) -> Iterator[client.ApiClient]:
    made = client.ApiClient(fake_api.configuration())
    try:
        yield made
    finally:
        made.close()  # type: ignore[no-untyped-call]


@pytest.fixture
def custom(api_client: client.ApiClient) -> Any:
    """The ProxyPool CRD created, and the client's CustomObjectsApi (untyped)."""
    extensions: Any = client.ApiextensionsV1Api(api_client)  # takes the CRD as plain JSON
    extensions.create_custom_resource_definition(pool_crd.crd())
    return client.CustomObjectsApi(api_client)
