"""Injected faults, ResourceQuota, a token and a kubeconfig, through the real client."""

from __future__ import annotations

from pathlib import Path

import pytest
import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from tests.k8s.conftest import NAMESPACE, Core, status_body, wait_for
from tests.k8s.fake_kube import FakeKube


def _cm(name: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name))


def _pod(name: str) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(containers=[client.V1Container(name="main", image="busybox:1.36")]),
    )


def test_429_carries_retry_after_in_the_headers_and_the_status(
    fake_kube: FakeKube, core_v1: Core
) -> None:
    fake_kube.inject(429, verb="create", resource="configmaps", retry_after=7)
    with pytest.raises(ApiException) as exc:
        core_v1.create_namespaced_config_map(NAMESPACE, _cm("a"))
    assert exc.value.status == 429
    assert exc.value.headers is not None
    assert exc.value.headers["Retry-After"] == "7"
    body = status_body(exc.value)
    assert body["reason"] == "TooManyRequests"
    assert body["details"]["retryAfterSeconds"] == 7
    # Once only: the next create lands, and the failed one created nothing.
    core_v1.create_namespaced_config_map(NAMESPACE, _cm("a"))
    assert [o["metadata"]["name"] for o in fake_kube.objects("configmaps")] == ["a"]
    assert [c.code for c in fake_kube.calls] == [429, 201]


def test_a_fault_matches_its_verb_and_resource_only(fake_kube: FakeKube, core_v1: Core) -> None:
    fake_kube.inject(503, verb="list", resource="pods", times=2)
    core_v1.create_namespaced_config_map(NAMESPACE, _cm("untouched"))
    core_v1.list_namespaced_config_map(NAMESPACE)
    for _ in range(2):
        with pytest.raises(ApiException) as exc:
            core_v1.list_namespaced_pod(NAMESPACE)
        assert exc.value.status == 503
        assert status_body(exc.value)["reason"] == "ServiceUnavailable"
    assert core_v1.list_namespaced_pod(NAMESPACE).items == []


def test_500_and_custom_statuses(core_v1: Core, fake_kube: FakeKube) -> None:
    fake_kube.inject(500)
    with pytest.raises(ApiException) as exc:
        core_v1.read_namespaced_secret("x", NAMESPACE)
    assert exc.value.status == 500
    assert status_body(exc.value)["reason"] == "InternalError"
    fake_kube.inject(403, resource="secrets", message="nope, not you")
    with pytest.raises(ApiException) as exc:
        core_v1.list_namespaced_secret(NAMESPACE)
    assert exc.value.status == 403
    assert status_body(exc.value)["message"] == "nope, not you"
    fake_kube.inject(403, verb="get")
    with pytest.raises(ApiException) as exc:
        core_v1.read_namespaced_pod("p", NAMESPACE)
    assert status_body(exc.value)["message"] == (
        'pods "p" is forbidden: User "system:serviceaccount:proxies:default" cannot get '
        'resource "pods" in API group "" in the namespace "proxies"'
    )


def test_quota_refuses_pods_beyond_the_limit_with_the_admission_message(
    fake_kube: FakeKube, core_v1: Core
) -> None:
    fake_kube.quota(NAMESPACE, pods=1)
    core_v1.create_namespaced_pod(NAMESPACE, _pod("one"))
    with pytest.raises(ApiException) as exc:
        core_v1.create_namespaced_pod(NAMESPACE, _pod("two"))
    assert exc.value.status == 403
    body = status_body(exc.value)
    assert body["reason"] == "Forbidden"
    assert body["message"] == (
        'pods "two" is forbidden: exceeded quota: proxyfleet-quota, requested: pods=1, '
        "used: pods=1, limited: pods=1"
    )
    core_v1.create_namespaced_pod("elsewhere", _pod("two"))  # other namespaces are free
    fake_kube.quota(NAMESPACE, pods=None)
    core_v1.create_namespaced_pod(NAMESPACE, _pod("two"))


def test_a_kubeconfig_with_a_token_is_what_the_fake_wants(
    fake_kube: FakeKube, tmp_path: Path
) -> None:
    path = fake_kube.write_kubeconfig(tmp_path / "kubeconfig", namespace="team", token="t0ken")
    loaded = client.Configuration()
    config.load_kube_config(config_file=str(path), client_configuration=loaded)  # type: ignore[no-untyped-call]
    assert loaded.host == fake_kube.url
    with client.ApiClient(loaded) as api_client:
        api = client.CoreV1Api(api_client)
        assert api.list_namespaced_pod("team").items == []
    anonymous = client.CoreV1Api(client.ApiClient(client.Configuration(host=fake_kube.url)))
    with pytest.raises(ApiException) as exc:
        anonymous.list_namespaced_pod("team")
    assert exc.value.status == 401
    contexts, active = config.list_kube_config_contexts(config_file=str(path))  # type: ignore[no-untyped-call]
    assert active["context"]["namespace"] == "team"
    assert len(contexts) == 1


def test_discovery_and_version_answer(core_v1: Core, fake_kube: FakeKube) -> None:
    with client.ApiClient(fake_kube.configuration()) as api_client:
        version = client.VersionApi(api_client).get_code()
        assert version.major == "1"
        versions = client.CoreApi(api_client).get_api_versions()
        assert versions.versions == ["v1"]
        resources = core_v1.get_api_resources()
        assert {"pods", "secrets", "configmaps", "services", "pods/status"} <= {
            r.name for r in resources.resources
        }
    assert fake_kube.verbs() == set()  # discovery is no resource call


def test_an_unknown_route_is_404(fake_kube: FakeKube) -> None:
    with (
        client.ApiClient(fake_kube.configuration()) as api_client,
        pytest.raises(ApiException) as exc,
    ):
        client.AppsV1Api(api_client).list_namespaced_deployment(NAMESPACE)
    assert exc.value.status == 404


def test_a_delayed_answer_times_the_client_out(fake_kube: FakeKube, core_v1: Core) -> None:
    # A create is not retried by urllib3 (a GET would be, and the retry would succeed).
    fake_kube.inject_delay(1.0, verb="create", resource="configmaps")
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        core_v1.create_namespaced_config_map(NAMESPACE, _cm("slow"), _request_timeout=0.2)
    # The server still carries it out once its delay is over.
    wait_for(lambda: fake_kube.objects("configmaps"), what="the slow create landed")


def test_a_disconnect_before_or_after_the_call_lands(fake_kube: FakeKube, core_v1: Core) -> None:
    fake_kube.inject_disconnect(verb="create", resource="configmaps")
    with pytest.raises(urllib3.exceptions.ProtocolError):
        core_v1.create_namespaced_config_map(NAMESPACE, _cm("lost"), _request_timeout=5)
    assert fake_kube.objects("configmaps") == []
    fake_kube.inject_disconnect(verb="create", resource="configmaps", after=True)
    with pytest.raises(urllib3.exceptions.ProtocolError):
        core_v1.create_namespaced_config_map(NAMESPACE, _cm("landed"), _request_timeout=5)
    assert [o["metadata"]["name"] for o in fake_kube.objects("configmaps")] == ["landed"]
    assert [(c.verb, c.code) for c in fake_kube.calls] == [("create", 0), ("create", 0)]


def test_an_injected_409_on_create_is_already_exists(fake_kube: FakeKube, core_v1: Core) -> None:
    fake_kube.inject(409, verb="create")
    with pytest.raises(ApiException) as exc:
        core_v1.create_namespaced_config_map(NAMESPACE, _cm("dup"))
    body = status_body(exc.value)
    assert body["reason"] == "AlreadyExists"
    assert body["message"] == "configmaps already exists"
