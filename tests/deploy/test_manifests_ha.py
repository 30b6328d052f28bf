"""Offline checks of the HA component (deploy/kubernetes/ha) and its overlay
deploy/kubernetes-ha, rendered with `kubectl kustomize` like the others (validated strictly
by test_overlays_validate.py, cross-checked by test_overlays_structure.py): the services'
URLs name every NATS server and every Sentinel the manifests run, under the master name
the Redis pods use; the NATS servers route to each other; the start scripts of Redis and
Sentinel, run with stand-ins for redis-cli, hostname and the servers, start each pod as
the primary or replica the Sentinels name."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import yaml
from tests.deploy.kube import DEPLOY, Doc, container_env, named, of_kind, pod_spec, render

from proxyfleet.common.core.redis_url import SentinelRedis, parse_redis_url
from proxyfleet.common.core.settings import CommonSettings

HA_DIR = DEPLOY / "kubernetes" / "ha"
OVERLAY = "kubernetes-ha"


def _env(docs: list[Doc], workload: Doc) -> dict[str, str]:
    (container,) = pod_spec(workload)["containers"]
    return container_env(docs, container)


def _container_env_value(workload: Doc, name: str) -> str:
    (container,) = pod_spec(workload)["containers"]
    (value,) = [e["value"] for e in container["env"] if e["name"] == name]
    return str(value)


def test_the_component_lists_its_files() -> None:
    kustomization = yaml.safe_load((HA_DIR / "kustomization.yaml").read_text())
    assert kustomization["kind"] == "Component"
    listed = set(kustomization["resources"]) | {p["path"] for p in kustomization["patches"]}
    present = {p.name for p in HA_DIR.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == present
    overlay = yaml.safe_load((DEPLOY / OVERLAY / "kustomization.yaml").read_text())
    assert "../kubernetes/ha" in overlay["components"]


def test_every_service_gets_every_nats_server_and_sentinel() -> None:
    docs = render(OVERLAY)
    nats = named(docs, "StatefulSet", "nats")
    sentinels = named(docs, "StatefulSet", "redis-sentinel")
    redis = named(docs, "StatefulSet", "redis")
    assert (nats["spec"]["replicas"], sentinels["spec"]["replicas"]) == (3, 3)
    # A primary and two replicas: with the replica wait, a failover leaves one to wait for.
    assert redis["spec"]["replicas"] == 3
    master = _container_env_value(redis, "MASTER_NAME")
    assert _container_env_value(sentinels, "MASTER_NAME") == master
    for dep in of_kind(docs, "Deployment"):
        env = _env(docs, dep)
        servers = env["PROXYFLEET_NATS_URL"].split(",")
        assert servers == [f"nats://nats-{n}.nats:4222" for n in range(3)]
        target = parse_redis_url(env["PROXYFLEET_REDIS_URL"])
        assert target == SentinelRedis(
            sentinels=tuple((f"redis-sentinel-{n}.redis-sentinel", 26379) for n in range(3)),
            master=master,
        )
        assert env["PROXYFLEET_STREAM_REPLICAS"] == "3"
        settings = CommonSettings(
            nats_url=env["PROXYFLEET_NATS_URL"],
            redis_url=env["PROXYFLEET_REDIS_URL"],
            stream_replicas=int(env["PROXYFLEET_STREAM_REPLICAS"]),
        )
        assert settings.stream_replicas == nats["spec"]["replicas"]
        assert int(env["PROXYFLEET_REDIS_WAIT_REPLICAS"]) == redis["spec"]["replicas"] - 2
    # The names in the URLs are those of headless Services over these pods.
    for name, port in (("nats", 4222), ("redis-sentinel", 26379), ("redis", 6379)):
        service = named(docs, "Service", name)
        assert service["spec"]["clusterIP"] == "None"
        assert service["spec"]["publishNotReadyAddresses"] is True
        assert port in {p["port"] for p in service["spec"]["ports"]}
        assert named(docs, "StatefulSet", name)["spec"]["serviceName"] == name


def test_the_nats_servers_form_one_jetstream_cluster() -> None:
    nats = named(render(OVERLAY), "StatefulSet", "nats")
    (container,) = pod_spec(nats)["containers"]
    args = container["args"]

    def flag(name: str) -> str:
        return str(args[args.index(name) + 1])

    assert "-js" in args
    assert flag("--routes").split(",") == [f"nats://nats-{n}.nats:6222" for n in range(3)]
    assert flag("--cluster") == "nats://0.0.0.0:6222"
    assert flag("--server_name") == "$(POD_NAME)"  # JetStream needs a unique one per server
    assert {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} in (
        container["env"]
    )
    assert nats["spec"]["podManagementPolicy"] == "Parallel"


def test_each_replicated_store_has_a_budget_of_one() -> None:
    docs = render(OVERLAY)
    for name in ("nats", "redis", "redis-sentinel"):
        pdb = named(docs, "PodDisruptionBudget", name)
        assert pdb["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": {"app": name}}}


# ---- the start scripts ------------------------------------------------------------------


def _scripts() -> dict[str, str]:
    data: dict[str, str] = named(render(OVERLAY), "ConfigMap", "redis-ha-scripts")["data"]
    return data


def _stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _run(tmp_path: Path, script: str, pod: str, sentinel_says: str) -> str:
    """Run a start script as pod `pod`, where every Sentinel asked answers `sentinel_says`
    (empty: none answers); what it runs prints its arguments (or its config file)."""
    stubs = tmp_path / "bin"
    stubs.mkdir(exist_ok=True)
    _stub(stubs, "hostname", f"echo {pod}")
    answer = f"printf '%s\\n6379\\n' {sentinel_says}" if sentinel_says else "exit 1"
    _stub(stubs, "redis-cli", answer)
    _stub(stubs, "redis-server", 'echo "$@"')
    _stub(stubs, "redis-sentinel", 'cat "$1"')
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    text = _scripts()[script].replace("/data", str(data))
    env = {"PATH": f"{stubs}:{os.environ['PATH']}", "MASTER_NAME": "proxyfleet"}
    out = subprocess.run(
        ["sh", "-c", text], env=env, capture_output=True, text=True, timeout=30, check=True
    )
    return out.stdout


def test_redis_starts_as_the_primary_or_replica_the_sentinels_name(tmp_path: Path) -> None:
    first_start = _run(tmp_path, "start-redis.sh", "redis-0", "")
    assert "--replicaof" not in first_start
    assert "--replica-announce-ip redis-0.redis" in first_start
    assert "--appendonly yes" in first_start
    replica = _run(tmp_path, "start-redis.sh", "redis-1", "")
    assert replica.rstrip().endswith("--replicaof redis-0.redis 6379")
    # After a failover to redis-1, redis-0 comes back as its replica, not a second primary.
    back = _run(tmp_path, "start-redis.sh", "redis-0", "redis-1.redis")
    assert back.rstrip().endswith("--replicaof redis-1.redis 6379")
    promoted = _run(tmp_path, "start-redis.sh", "redis-1", "redis-1.redis")
    assert "--replicaof" not in promoted


def test_a_sentinel_monitors_the_primary_its_peers_name(tmp_path: Path) -> None:
    first_start = _run(tmp_path, "start-sentinel.sh", "redis-sentinel-2", "")
    assert "sentinel monitor proxyfleet redis-0.redis 6379 2" in first_start
    assert "sentinel announce-ip redis-sentinel-2.redis-sentinel" in first_start
    lines = first_start.splitlines()
    # Hostnames resolved before the monitor line names one.
    assert lines.index("sentinel resolve-hostnames yes") < lines.index(
        "sentinel monitor proxyfleet redis-0.redis 6379 2"
    )
    later = _run(tmp_path, "start-sentinel.sh", "redis-sentinel-0", "redis-1.redis")
    assert "sentinel monitor proxyfleet redis-1.redis 6379 2" in later
