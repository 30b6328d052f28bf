"""Opt-in (`make test-integration-k8s`, PROXYFLEET_INTEGRATION_K8S=1): the journey of
cluster_journey.py against a real cluster (KUBECONFIG; a kind cluster works): one Squid pod
ready after a real CONNECT probe, leased, a page fetched through it, reported, released
(cooldown 409), deleted, and nothing of the installation left in the namespace. Then a
ProxyPool's life (tests/pool_operator/journey.py): the CRD of deploy/ installed, the pool
operator run on this machine as a ServiceAccount bound to deploy/'s Role, with a Redis of
its own, and a ProxyPool applied, reported, scaled through /scale and deleted (its
finalizer held until the pool is gone).

Two modes (PROXYFLEET_K8S_MODE):
- `job` (default): the journey runs inside the cluster as the Job of job.yaml, in the
  namespace, with the proxyfleet image (PROXYFLEET_K8S_IMAGE, default proxyfleet:dev, built
  from deploy/Dockerfile and loaded into the cluster), because pod IPs are reachable only
  from inside the cluster network (on kind: inside the node container).
- `direct`: the journey runs on this machine, for clusters whose pod IPs are routable from
  here, or with PROXYFLEET_K8S_EXPOSE=node_port / load_balancer. Its page is
  PROXYFLEET_K8S_TARGET (default https://www.gstatic.com/generate_204: the pods cannot reach
  this machine's loopback; `local` with PROXYFLEET_K8S_TARGET_HOST serves one from here).
Other settings: PROXYFLEET_K8S_NAMESPACE (default proxyfleet-it, created and deleted when
absent), PROXYFLEET_K8S_CONTEXT, PROXYFLEET_K8S_SQUID_IMAGE (default: the provider's)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from tests.k8s.integration.cluster_journey import (
    JourneySettings,
    api_client,
    left_over,
    new_installation_id,
    run_journey,
)
from tests.k8s.integration.gate import Plan, plan, skip_reason
from tests.k8s.integration.job_runner import JobRun, figures
from tests.k8s.integration.proxypool_cluster import operator_access
from tests.pool_operator.harness import OperatorFactory, Pools
from tests.pool_operator.journey import proxypool_journey

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.store import PoolStore, ProxyRegistry

SKIP = skip_reason(os.environ)
pytestmark = [
    pytest.mark.skipif(SKIP is not None, reason=SKIP or ""),
    pytest.mark.timeout(1800),
]


@pytest.fixture
def cluster_plan() -> Plan:
    try:
        return plan(os.environ)
    except ValueError as exc:
        pytest.fail(str(exc))


@pytest.fixture
def api(cluster_plan: Plan) -> k8s.ApiClient:
    return api_client(cluster_plan.kubeconfig, cluster_plan.context)


@pytest.fixture
def namespace(api: k8s.ApiClient, cluster_plan: Plan) -> Iterator[str]:
    """The plan's namespace; created for the run (and deleted after) when it is absent."""
    core = k8s.CoreV1Api(api)
    name = cluster_plan.namespace
    try:
        core.read_namespace(name)
        created = False
    except ApiException as exc:
        if exc.status != 404:
            raise
        core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name)))
        created = True
    yield name
    if created:
        core.delete_namespace(name)


def test_a_real_cluster_runs_the_journey(
    api: k8s.ApiClient, cluster_plan: Plan, namespace: str
) -> None:
    p = cluster_plan
    settings = JourneySettings(
        namespace=namespace,
        installation_id=new_installation_id(),
        kubeconfig=p.kubeconfig,
        context=p.context,
        expose=p.expose,
        squid_image=p.squid_image,
        target=p.target,
        target_host=p.target_host,
    )
    if p.mode == "direct":
        got = run_journey(settings)
    else:
        job = JobRun(api, namespace)
        env = {
            "PROXYFLEET_K8S_INSTALLATION": settings.installation_id,
            "PROXYFLEET_K8S_EXPOSE": p.expose,
            "PROXYFLEET_K8S_SQUID_IMAGE": p.squid_image,
            "PROXYFLEET_K8S_TARGET": p.target,
        }
        try:
            job.apply(p.image, env)
            succeeded = job.wait(timeout=1500)
            log = job.log()
            print(log)
        finally:
            job.delete()
        assert succeeded, "the journey Job failed: its log is above"
        found = figures(log)
        assert found is not None, "the Job succeeded without its JOURNEY line"
        got = found
    print(f"\nreal cluster ({p.mode}, expose {p.expose}): {got}")
    # Checked again with this machine's credentials, not only the journey's own.
    assert left_over(k8s.CoreV1Api(api), settings) == {}


async def test_a_real_cluster_reconciles_a_proxypool(
    api: k8s.ApiClient,
    namespace: str,
    redis_url: str,
    redis_client: aioredis.Redis,
    tmp_path: Path,
) -> None:
    with operator_access(api, namespace, tmp_path) as kubeconfig:
        operators = OperatorFactory(kubeconfig, redis_url, tmp_path)
        try:
            op = operators.start("--watch-namespaces", namespace)
            await op.wait_ready(within=120)
            clock = SystemClock()
            got = await proxypool_journey(
                Pools(api, namespace),
                PoolStore(redis_client, clock),
                ProxyRegistry(redis_client, clock),
                f"it-{secrets.token_hex(3)}",
            )
            assert op.stop() == 0
            errors = [line for line in op.lines() if line.get("level") == "error"]
            assert errors == [], op.log_tail()
        finally:
            operators.stop_all()
    print(f"\nreal cluster ProxyPool: {got}")
