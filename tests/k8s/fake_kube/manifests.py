"""Proxy objects laid out as provisioner-k8s makes them (docs: interfaces section 2), for
the fake's own tests and anyone who needs a pod the kubelet runs. Pure: no I/O."""

from __future__ import annotations

import base64

from proxyfleet.common.domain.squid import SquidOptions, htpasswd_line, render_squid_conf

from .objects import Json

CONF_DIR = "/etc/squid/proxyfleet"
AUTH_DIR = "/etc/squid/auth"
EMPTY_DIRS = {
    "run": "/var/run/squid",
    "log": "/var/log/squid",
    "spool": "/var/spool/squid",
    "cache": "/var/cache/squid",
}


def labels(proxy_id: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/managed-by": "proxyfleet",
        "proxyfleet.io/installation": "test",
        "proxyfleet.io/proxy-id": proxy_id,
        "proxyfleet.io/provider": "cluster",
    }


def squid_pod(
    proxy_id: str, *, port: int = 3128, image: str = "ubuntu/squid:6.10-24.10_beta"
) -> Json:
    name = f"pf-{proxy_id}"
    mounts = [
        {"name": "config", "mountPath": CONF_DIR, "readOnly": True},
        {"name": "auth", "mountPath": AUTH_DIR, "readOnly": True},
        *({"name": v, "mountPath": p} for v, p in EMPTY_DIRS.items()),
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels(proxy_id)},
        "spec": {
            "restartPolicy": "Always",
            "securityContext": {"runAsNonRoot": True, "runAsUser": 13},
            "containers": [
                {
                    "name": "squid",
                    "image": image,
                    "command": ["squid", "-N", "-f", f"{CONF_DIR}/squid.conf"],
                    "ports": [{"name": "proxy", "containerPort": port}],
                    "readinessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 2},
                    "securityContext": {
                        "readOnlyRootFilesystem": True,
                        "allowPrivilegeEscalation": False,
                        "capabilities": {"drop": ["ALL"]},
                    },
                    "resources": {
                        "requests": {"cpu": "50m", "memory": "64Mi"},
                        "limits": {"cpu": "500m", "memory": "128Mi"},
                    },
                    "volumeMounts": mounts,
                }
            ],
            "volumes": [
                {"name": "config", "configMap": {"name": name}},
                {"name": "auth", "secret": {"secretName": name}},
                *({"name": v, "emptyDir": {}} for v in EMPTY_DIRS),
            ],
        },
    }


def owner_reference(pod: Json) -> Json:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": pod["metadata"]["name"],
        "uid": pod["metadata"]["uid"],
        "controller": False,
    }


def squid_config_map(
    proxy_id: str,
    owner: Json | None = None,
    *,
    port: int = 3128,
    connect_ports: list[int] | None = None,
) -> Json:
    conf = render_squid_conf(
        SquidOptions(
            http_port=port,
            htpasswd_path=f"{AUTH_DIR}/htpasswd",
            pid_file="/var/run/squid/squid.pid",
            cache_log="/dev/stderr",
            connect_ports=connect_ports or [443],
        )
    )
    meta: Json = {"name": f"pf-{proxy_id}", "labels": labels(proxy_id)}
    if owner is not None:
        meta["ownerReferences"] = [owner_reference(owner)]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"squid.conf": conf}}


def htpasswd_secret(proxy_id: str, username: str, password: str, owner: Json | None = None) -> Json:
    line = htpasswd_line(username, password)
    meta: Json = {"name": f"pf-{proxy_id}", "labels": labels(proxy_id)}
    if owner is not None:
        meta["ownerReferences"] = [owner_reference(owner)]
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": meta,
        "type": "Opaque",
        "data": {"htpasswd": base64.b64encode(line.encode()).decode()},
    }
