"""Deterministic names, labels, annotations and selectors of what the provisioner makes.

Every object of a proxy is named `pf-<proxy id>` (pod, Secret, ConfigMap, Service), so a
retried or redelivered create meets its own earlier objects (409) and adopts them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from proxyfleet.common.core.ids import resource_name
from proxyfleet.provisioner_k8s.pure.config import MANAGED_BY_LABEL, is_label_value

MANAGED_BY = "proxyfleet"
LABEL_INSTALLATION = "proxyfleet.io/installation"
LABEL_PROXY = "proxyfleet.io/proxy-id"
LABEL_PROVIDER = "proxyfleet.io/provider"

ANNOTATION_ZONE = "proxyfleet.io/zone"
"""The proxy's provider zone (re-adoption needs it)."""
ANNOTATION_CREATED = "proxyfleet.io/created-at"
"""Unix seconds of the create by our clock (GC and re-adoption compare it to ours)."""
ANNOTATION_LABELS = "proxyfleet.io/proxy-labels"
"""The proxy's own labels (JSON), for re-adoption: they need not be label-safe."""
ANNOTATION_PLACEMENT = "proxyfleet.io/placement"
"""The proxy's placement (JSON), for re-adoption."""
ANNOTATION_PORT = "proxyfleet.io/port"

SECRET_HTPASSWD = "htpasswd"  # noqa: S105 (a key name)
"""Secret key of the htpasswd line Squid checks (the only key mounted into the pod)."""
SECRET_USERNAME = "username"  # noqa: S105 (a key name)
SECRET_PASSWORD = "password"  # noqa: S105 (a key name)
"""Secret keys of the proxy's credentials: a store reset re-adopts the proxy with them.
Never mounted into the pod, never logged."""
CONFIGMAP_KEY = "squid.conf"


def object_name(proxy_id: str) -> str:
    """Every object of a proxy: `pf-<proxy id>`."""
    return resource_name(proxy_id)


def proxy_id_of(name: str) -> str | None:
    prefix = resource_name("")
    return name[len(prefix) :] if name.startswith(prefix) and len(name) > len(prefix) else None


def resource_id(namespace: str, proxy_id: str) -> str:
    """`<namespace>/pf-<proxy id>`: the pod, and with it the proxy's other objects."""
    return f"{namespace}/{object_name(proxy_id)}"


def parse_resource_id(rid: str) -> tuple[str, str]:
    """(namespace, pod name) of a resource id; ValueError when it is not one of ours."""
    namespace, slash, name = rid.partition("/")
    if not slash or not namespace or proxy_id_of(name) is None:
        raise ValueError(f"resource id {rid!r}: expected <namespace>/pf-<proxy id>")
    return namespace, name


def check_label_value(what: str, value: str) -> None:
    """ValueError when `value` cannot be a label value as it is (ids must round-trip)."""
    if not value or not is_label_value(value):
        raise ValueError(
            f"{what} {value!r}: must be a Kubernetes label value (1-63 letters, digits,"
            " '-', '_' or '.', starting and ending alphanumeric) for the kubernetes provider"
        )


def labels(
    installation_id: str, provider: str, proxy_id: str, extra: Mapping[str, str]
) -> dict[str, str]:
    """The labels of every object of a proxy; ours win over `extra` (checked apart)."""
    return {
        **extra,
        MANAGED_BY_LABEL: MANAGED_BY,
        LABEL_INSTALLATION: installation_id,
        LABEL_PROXY: proxy_id,
        LABEL_PROVIDER: provider,
    }


def installation_selector(installation_id: str, provider: str) -> str:
    """Label selector of every object of this installation and provider."""
    return (
        f"{MANAGED_BY_LABEL}={MANAGED_BY},{LABEL_INSTALLATION}={installation_id},"
        f"{LABEL_PROVIDER}={provider}"
    )


def is_ours(obj_labels: Mapping[str, str] | None, installation_id: str, proxy_id: str) -> bool:
    """An object found under a proxy's name is ours when its labels say this installation
    and this proxy (anything else is someone else's: never adopted, never deleted)."""
    got = obj_labels or {}
    return got.get(LABEL_INSTALLATION) == installation_id and got.get(LABEL_PROXY) == proxy_id


def proxy_annotations(
    zone: str,
    created_at: float,
    port: int,
    proxy_labels: Mapping[str, str],
    placement: Mapping[str, str],
) -> dict[str, str]:
    return {
        ANNOTATION_ZONE: zone,
        ANNOTATION_CREATED: f"{created_at:.3f}",
        ANNOTATION_PORT: str(port),
        ANNOTATION_LABELS: json.dumps(dict(proxy_labels), sort_keys=True),
        ANNOTATION_PLACEMENT: json.dumps(dict(placement), sort_keys=True),
    }


def string_map(text: str | None) -> dict[str, str]:
    """A JSON object of strings from an annotation; {} when absent or malformed."""
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}
