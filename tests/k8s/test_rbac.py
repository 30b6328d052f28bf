"""The provisioner's Role (deploy/kubernetes/k8s/role.yaml) grants exactly what
provisioner-k8s uses. The whole system runs against the fake API server (provisioner-k8s a
process, expose node_port so Services are made): creates, the pod watch, a delete, GC's
listings and the sweeper removing leftovers; the fake records every (verb, resource) it
was asked. That set must be covered by the Role, and every verb and resource the Role
grants must have been used (it grants nothing unused), with no wildcards and no call
outside the proxy namespace (the Role is namespaced: anything else would be forbidden)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from tests.e2e.journey import Api, wait_for
from tests.e2e.k8s_stack import NAMESPACE, PROVIDER, k8s_stack, left_in_fake
from tests.k8s.fake_kube import FakeKube

from proxyfleet.provisioner_k8s.pure import names

pytestmark = pytest.mark.timeout(300)
ROLE_FILE = Path(__file__).parents[2] / "deploy" / "kubernetes" / "k8s" / "role.yaml"
DB = 15
INSTALLATION = f"k8s-e2e-{DB}"  # the stack's installation id for that database
LEFTOVER = "p0rphan00000000000k8s"


def role_grants() -> set[tuple[str, str]]:
    """(verb, resource) pairs of the Role's rules; AssertionError on a wildcard or a rule
    beyond the core API group."""
    [role] = [d for d in yaml.safe_load_all(ROLE_FILE.read_text()) if d and d["kind"] == "Role"]
    grants: set[tuple[str, str]] = set()
    for rule in role["rules"]:
        assert rule["apiGroups"] == [""], rule  # core/v1 only: pods, secrets, ...
        assert "resourceNames" not in rule, rule
        for word in (*rule["verbs"], *rule["resources"]):
            assert "*" not in word, f"wildcard in {rule}"
        grants |= {(v, r) for v in rule["verbs"] for r in rule["resources"]}
    return grants


def _seed_leftovers(fake: FakeKube) -> None:
    """A Secret, ConfigMap and Service of this installation whose pod never existed, as a
    provisioner killed half-way would leave them: the sweeper's to delete (made an hour
    ago, by their created-at annotation, so past any minimum age)."""
    core = client.CoreV1Api(client.ApiClient(fake.configuration()))
    meta = client.V1ObjectMeta(
        name=names.object_name(LEFTOVER),
        labels=names.labels(INSTALLATION, PROVIDER, LEFTOVER, {}),
        annotations={names.ANNOTATION_CREATED: str(time.time() - 3600)},
    )
    core.create_namespaced_secret(NAMESPACE, client.V1Secret(metadata=meta, data={}))
    core.create_namespaced_config_map(NAMESPACE, client.V1ConfigMap(metadata=meta, data={}))
    spec = client.V1ServiceSpec(
        type="NodePort",
        selector={names.LABEL_PROXY: LEFTOVER},
        ports=[client.V1ServicePort(port=3128, target_port=3128)],
    )
    core.create_namespaced_service(NAMESPACE, client.V1Service(metadata=meta, spec=spec))


def test_the_role_grants_exactly_what_the_provisioner_uses(
    fake_kube: FakeKube, nats_url: str, redis_url: str
) -> None:
    grants = role_grants()
    _seed_leftovers(fake_kube)
    first = len(fake_kube.calls)  # from here on, only the system calls the fake
    with k8s_stack(fake_kube, nats_url, redis_url, db=DB, expose="node_port") as stack:
        assert stack.opts.installation_id == INSTALLATION
        admin = Api(stack.api_url, stack.admin_token)
        r = admin.http.post("/v1/proxies", json={"provider": PROVIDER, "count": 2})
        assert r.status_code == 202, r.text
        ids = [p["id"] for p in r.json()["items"]]
        wait_for(
            "2 ready proxies",
            lambda: all(ph == "ready" for ph in admin.phases(ids).values()),
            timeout=60,
        )
        for proxy_id in ids:
            r = admin.http.delete(f"/v1/proxies/{proxy_id}")
            assert r.status_code in (200, 202), r.text
        wait_for(
            "both deleted",
            lambda: all(ph == "deleted" for ph in admin.phases(ids).values()),
            timeout=60,
        )
        # GC lists every second; the sweeper (min age 1 s) deletes the seeded leftovers.
        wait_for("nothing left", lambda: left_in_fake(fake_kube) == {}, timeout=30)
    calls: list[Any] = fake_kube.calls[first:]
    outside = {(c.verb, c.resource, c.namespace) for c in calls if c.namespace != NAMESPACE}
    assert not outside, f"calls outside the proxy namespace: {sorted(outside)}"
    used = {(c.verb, c.resource) for c in calls}
    print(f"\nverbs used: {sorted(used)}")
    assert used <= grants, f"used but not granted: {sorted(used - grants)}"
    assert grants <= used, f"granted but never used: {sorted(grants - used)}"
