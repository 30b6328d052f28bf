"""The whole system through provisioner-k8s and the fake API server when things go wrong:
watch streams dropped and history compacted (410 Gone) while pods boot, an image that
cannot be pulled, and a ready pod evicted or OOM-killed."""

from __future__ import annotations

import secrets

import pytest
from kubernetes import client
from tests.e2e.journey import Api, wait_for
from tests.e2e.k8s_stack import (
    NAMESPACE,
    PROVIDER,
    ProxyEvents,
    k8s_stack,
    left_in_fake,
    pod_name,
    pods_per_proxy,
)
from tests.k8s.fake_kube import FakeKube, PodMode

pytestmark = pytest.mark.timeout(300)


def test_dropped_watches_and_410_gone_end_with_every_proxy_ready_once(
    fake: FakeKube, nats_url: str, redis_url: str
) -> None:
    # Pods take a second to get their IP, so the drops land while they boot.
    fake.kubelet.start_delay = 1.0
    with k8s_stack(fake, nats_url, redis_url, db=12) as stack, ProxyEvents(stack.nats_url) as ev:
        admin = Api(stack.api_url, stack.admin_token)
        r = admin.http.post("/v1/proxies", json={"provider": PROVIDER, "count": 20})
        assert r.status_code == 202, r.text
        ids = [p["id"] for p in r.json()["items"]]
        wait_for("a first pod", lambda: fake.objects("pods", NAMESPACE), timeout=30)
        fake.drop_watches()
        wait_for("ten pods", lambda: len(fake.objects("pods", NAMESPACE)) >= 10, timeout=30)
        watches_before = _watch_calls(fake)
        # End the stream again; its resumptions are answered 503 until history is forgotten
        # past its last resourceVersion (an object it does not watch moves the version on),
        # so the watcher holds on to that version meanwhile: its next watch gets 410 Gone,
        # and it lists again. (A fixed number of 503s raced the compaction on a busy
        # machine: the watcher was back before the history was gone.)
        fake.inject(503, verb="watch", resource="pods", times=1_000)
        fake.drop_watches()
        wait_for("the watch answered 503", lambda: _watch_codes(fake).count(503), timeout=10)
        _unwatched_change(fake)
        fake.compact()
        fake.faults.clear()
        try:
            wait_for(
                "20 ready proxies",
                lambda: all(ph == "ready" for ph in admin.phases(ids).values()),
                timeout=60,
            )
        except AssertionError as exc:
            pods = [p.get("status") for p in fake.objects("pods", NAMESPACE)][:1]
            raise AssertionError(f"{exc}; {admin.phases(ids)}; first pod: {pods}") from None
        assert _watch_calls(fake) > watches_before  # the watcher did watch again
        gone = [c for c in fake.calls if c.verb == "watch" and c.code == 410]
        assert gone, f"no watch was answered 410 Gone: {_watch_codes(fake)}"
        relists = [c for c in fake.calls[fake.calls.index(gone[0]) :] if c.verb == "list"]
        assert any(c.resource == "pods" for c in relists), "no relist after the 410"
        print(f"\n{len(gone)} watches answered 410 Gone, {_watch_calls(fake)} pod watches")
        # Ready events come from health after its probe; give a late duplicate time to show.
        wait_for("a ready event each", lambda: all(ev.count("proxy.ready", ids).values()))
        assert ev.count("proxy.ready", ids) == dict.fromkeys(ids, 1)
        assert pods_per_proxy(fake) == dict.fromkeys(ids, 1)
        for pid in ids:
            assert fake.pod_address(NAMESPACE, pod_name(pid)) == admin.proxy(pid)["host"]


def _wait_failed(admin: Api, fake: FakeKube, proxy_id: str) -> None:
    try:
        wait_for("failed", lambda: admin.proxy(proxy_id)["phase"] == "failed", timeout=30)
    except AssertionError as exc:
        pods = {p["metadata"]["name"]: p.get("status") for p in fake.objects("pods", NAMESPACE)}
        raise AssertionError(f"{exc}; proxy {admin.proxy(proxy_id)}; pods {pods}") from None


def _unwatched_change(fake: FakeKube) -> None:
    core = client.CoreV1Api(client.ApiClient(fake.configuration()))
    meta = client.V1ObjectMeta(name=f"unwatched-{secrets.token_hex(3)}")
    core.create_namespaced_config_map(NAMESPACE, client.V1ConfigMap(metadata=meta))


def _watch_codes(fake: FakeKube) -> list[int]:
    return [c.code for c in fake.calls if c.verb == "watch" and c.resource == "pods"]


def _watch_calls(fake: FakeKube) -> int:
    return sum(1 for c in fake.calls if c.verb == "watch" and c.resource == "pods")


@pytest.mark.parametrize(
    ("mode", "reasons"),
    [
        # The kubelet reports ErrImagePull first, then ImagePullBackOff: either names it.
        (PodMode.IMAGE_PULL_BACKOFF, ("ImagePullBackOff", "ErrImagePull")),
        (PodMode.CRASH_LOOP, ("CrashLoopBackOff",)),
    ],
)
def test_a_pod_that_cannot_start_fails_its_proxy_and_its_objects_are_deleted(
    mode: PodMode, reasons: tuple[str, ...], fake: FakeKube, nats_url: str, redis_url: str
) -> None:
    fake.kubelet.set_mode(mode)
    with k8s_stack(fake, nats_url, redis_url, db=13) as stack:
        admin = Api(stack.api_url, stack.admin_token)
        r = admin.http.post("/v1/proxies", json={"provider": PROVIDER, "count": 1})
        assert r.status_code == 202, r.text
        [proxy_id] = [p["id"] for p in r.json()["items"]]
        _wait_failed(admin, fake, proxy_id)
        reason = admin.proxy(proxy_id)["reason"]
        assert any(word in reason for word in reasons), reason
        wait_for("its objects deleted", lambda: left_in_fake(fake) == {}, timeout=30)


@pytest.mark.parametrize("kill", ["evict", "oom"])
def test_a_ready_pod_evicted_or_oom_killed_fails_its_proxy_with_the_reason(
    kill: str, fake: FakeKube, nats_url: str, redis_url: str
) -> None:
    with k8s_stack(fake, nats_url, redis_url, db=14) as stack:
        admin = Api(stack.api_url, stack.admin_token)
        r = admin.http.post("/v1/proxies", json={"provider": PROVIDER, "count": 1})
        assert r.status_code == 202, r.text
        [proxy_id] = [p["id"] for p in r.json()["items"]]
        wait_for("ready", lambda: admin.proxy(proxy_id)["phase"] == "ready", timeout=60)
        getattr(fake.kubelet, kill)(NAMESPACE, pod_name(proxy_id))
        _wait_failed(admin, fake, proxy_id)
        reason = admin.proxy(proxy_id)["reason"]
        assert {"evict": "Evicted", "oom": "OOMKilled"}[kill] in reason, reason
        wait_for("its objects deleted", lambda: left_in_fake(fake) == {}, timeout=30)
