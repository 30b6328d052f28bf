"""The whole system through provisioner-k8s (a process) and the fake Kubernetes API server:
API create → provisioner-k8s → fake API server → real Squid (the fake's kubelet) ←
health's real CONNECT → ready → lease → a page fetched through it → release (cooldown 409)
→ delete → nothing left in the fake. And 100 pods in one request."""

from __future__ import annotations

import ssl
import time
from collections import Counter

import httpx
import pytest
from tests.e2e.journey import Api, wait_for
from tests.e2e.k8s_stack import (
    NAMESPACE,
    PROVIDER,
    k8s_stack,
    left_in_fake,
    pod_name,
    pods_per_proxy,
    replica_name,
)
from tests.e2e.provider_stack import log_text
from tests.k8s.fake_kube import FakeKube

pytestmark = pytest.mark.timeout(300)


def test_a_k8s_proxy_end_to_end(fake: FakeKube, nats_url: str, redis_url: str) -> None:
    with k8s_stack(fake, nats_url, redis_url, db=10) as stack:
        admin = Api(stack.api_url, stack.admin_token)
        client = Api(stack.api_url, stack.client_token)
        started = time.monotonic()
        r = admin.http.post("/v1/proxies", json={"provider": PROVIDER, "count": 1})
        assert r.status_code == 202, r.text
        [proxy_id] = [p["id"] for p in r.json()["items"]]
        wait_for("the proxy ready", lambda: admin.proxy(proxy_id)["phase"] == "ready", timeout=60)
        ready_after = time.monotonic() - started

        [pod] = fake.objects("pods", NAMESPACE)
        assert pod["metadata"]["name"] == pod_name(proxy_id)
        assert pod["metadata"]["labels"]["proxyfleet.io/proxy-id"] == proxy_id
        assert pod["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "proxyfleet"
        assert admin.proxy(proxy_id)["host"] == fake.pod_address(NAMESPACE, pod_name(proxy_id))
        for res in ("secrets", "configmaps"):
            [obj] = fake.objects(res, NAMESPACE)
            [owner] = obj["metadata"]["ownerReferences"]
            assert (owner["kind"], owner["uid"]) == ("Pod", pod["metadata"]["uid"])

        r = client.http.post("/v1/leases", json={"ttl": 60, "holder": "k8s-e2e"})
        assert r.status_code == 201, r.text
        lease = r.json()
        assert lease["proxy"]["id"] == proxy_id
        ctx = ssl.create_default_context(cafile=stack.ca_file)
        with httpx.Client(proxy=lease["proxy"]["url"], verify=ctx, timeout=10) as via:
            page = via.get(stack.target_url)
        assert page.status_code == 200
        assert page.json()["ok"] is True
        lease_url = f"/v1/leases/{lease['lease_id']}"
        r = client.http.post(f"{lease_url}/report", json={"epoch": lease["epoch"], "outcome": "ok"})
        assert r.status_code == 200, r.text
        r = client.http.post(f"{lease_url}/release", json={"epoch": lease["epoch"]})
        assert r.status_code == 200, r.text
        r = client.http.post("/v1/leases", json={"proxy_id": proxy_id})
        assert r.status_code == 409, r.text
        assert "cool" in r.json()["message"]

        r = admin.http.delete(f"/v1/proxies/{proxy_id}")
        assert r.status_code in (200, 202), r.text
        wait_for("deleted", lambda: admin.proxy(proxy_id)["phase"] == "deleted", timeout=60)
        wait_for("nothing left in the fake", lambda: left_in_fake(fake) == {}, timeout=30)
        took = time.monotonic() - started
        print(f"\nk8s journey: ready after {ready_after:.1f} s, created to gone {took:.1f} s")
        logs = log_text(stack)
    creds = lease["proxy"]["url"].split("//", 1)[1].rsplit("@", 1)[0]
    assert creds.split(":", 1)[1] not in logs  # the proxy's password is never logged


def test_a_hundred_pods_in_one_request(fake: FakeKube, nats_url: str, redis_url: str) -> None:
    with k8s_stack(fake, nats_url, redis_url, db=11) as stack:
        admin = Api(stack.api_url, stack.admin_token)
        start = time.monotonic()
        r = admin.http.post("/v1/proxies", json={"provider": PROVIDER, "count": 100})
        assert r.status_code == 202, r.text
        ids = [p["id"] for p in r.json()["items"]]
        wait_for(
            "100 ready k8s proxies",
            lambda: all(ph == "ready" for ph in admin.phases(ids).values()) or None,
            timeout=30,
        )
        took = time.monotonic() - start
        calls = fake.calls
        by_verb = Counter(f"{c.verb} {c.resource}" for c in calls)
        spread = ", ".join(f"{k} {v}" for k, v in sorted(by_verb.items()))
        print(
            f"\n100 k8s proxies ready in {took:.1f} s; API calls per proxy "
            f"{len(calls) / len(ids):.2f} ({spread})"
        )
        assert pods_per_proxy(fake) == dict.fromkeys(ids, 1)


def test_two_provisioner_replicas_share_creates_with_no_duplicate_pod(
    fake: FakeKube, nats_url: str, redis_url: str
) -> None:
    with k8s_stack(fake, nats_url, redis_url, db=7, replicas=2) as stack:
        admin = Api(stack.api_url, stack.admin_token)
        r = admin.http.post("/v1/proxies", json={"provider": PROVIDER, "count": 40})
        assert r.status_code == 202, r.text
        ids = [p["id"] for p in r.json()["items"]]
        wait_for(
            "40 ready k8s proxies",
            lambda: all(ph == "ready" for ph in admin.phases(ids).values()) or None,
            timeout=60,
        )
        logs = stack.opts.base_dir / "logs"
        made = {
            name: (logs / f"{name}.log").read_text(errors="replace").count("k8s.proxy_created")
            for name in (replica_name(0), replica_name(1))
        }
    print(f"\ncreates by replica: {made}")
    assert pods_per_proxy(fake) == dict.fromkeys(ids, 1)
    assert sum(made.values()) == len(ids)
    assert all(n > 0 for n in made.values()), made
