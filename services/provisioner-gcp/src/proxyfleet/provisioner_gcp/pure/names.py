"""Deterministic names, labels and request ids of everything the GCP provisioner makes.

The same proxy id always gives the same instance name and the same `requestId` per
operation, so a retried insert is de-duplicated by Compute itself (same requestId within
its window) or adopted (same name), never a second VM.
"""

from __future__ import annotations

import hashlib
import re
import uuid

from proxyfleet.common.core.ids import resource_name

LABEL_PROXY = "proxyfleet-proxy"
LABEL_INSTALLATION = "proxyfleet-installation"
LABEL_PROVIDER = "proxyfleet-provider"
LABEL_PORT = "proxyfleet-port"
LABEL_CREATED = "proxyfleet-created"
"""Unix seconds of the create, as a label: GC's minimum age needs no timestamp parsing."""

CREDENTIALS_KEY = "proxyfleet-credentials"
"""Instance metadata key of the proxy's username and password (JSON), so a provisioner can
re-adopt a proxy after a registry reset. Never logged; the user-data has only the hash."""
USER_DATA_KEY = "user-data"

_REQUEST_NAMESPACE = uuid.UUID("5f0c2a64-8a53-4d0e-9f43-6a1c9e0b7d21")
"""Fixed namespace of the request-id UUIDs (uuid5): the ids are the same in every process."""
_LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")
_NAME_MAX = 63


def instance_name(proxy_id: str) -> str:
    """The GCE instance of a proxy: `pf-<proxy_id>` (also its boot disk's name)."""
    return resource_name(proxy_id)


def proxy_id_of(name: str) -> str | None:
    prefix = resource_name("")
    return name[len(prefix) :] if name.startswith(prefix) and len(name) > len(prefix) else None


def request_id(proxy_id: str, operation: str, scope: str = "") -> str:
    """The `requestId` of one mutating call: a UUID derived from the proxy id, the
    operation and its scope (the zone of an insert: a failover insert elsewhere is a
    different request)."""
    return str(uuid.uuid5(_REQUEST_NAMESPACE, f"{proxy_id}/{operation}/{scope}"))


def firewall_name(installation_id: str, provider: str) -> str:
    """One rule per installation and provider; hashed when the plain form is too long."""
    plain = f"pf-{label_value(installation_id)}-{provider}-proxy"
    if len(plain) <= _NAME_MAX and re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", plain):
        return plain
    digest = hashlib.sha256(f"{installation_id}/{provider}".encode()).hexdigest()[:16]
    return f"pf-{digest}-proxy"


def target_tag(installation_id: str, provider: str) -> str:
    """The network tag the firewall rule targets (same rules as firewall names)."""
    return firewall_name(installation_id, provider)


def label_value(value: str) -> str:
    """`value` as a GCE label value (lowercase, [a-z0-9_-], at most 63 characters)."""
    out = re.sub(r"[^a-z0-9_-]", "-", value.lower())[:63]
    return out


def check_label_value(what: str, value: str) -> None:
    """ValueError when `value` is not a GCE label value as it is (ids must round-trip)."""
    if not _LABEL_VALUE.fullmatch(value) or not value:
        raise ValueError(
            f"{what} {value!r}: must be a GCE label value (1-63 lowercase letters, digits, "
            "'_' or '-') to be used with the gcp provider"
        )


def labels(
    *,
    installation_id: str,
    provider: str,
    proxy_id: str,
    port: int,
    created_at: float,
    extra: dict[str, str],
) -> dict[str, str]:
    """Labels of a proxy's VM and disk: the operator's extras, then ours (ours win)."""
    return {
        **extra,
        LABEL_INSTALLATION: installation_id,
        LABEL_PROVIDER: provider,
        LABEL_PROXY: proxy_id,
        LABEL_PORT: str(port),
        LABEL_CREATED: str(int(created_at)),
    }


def installation_filter(installation_id: str, provider: str) -> str:
    """List filter of this installation's and provider's resources."""
    return f"{_eq(LABEL_INSTALLATION, installation_id)} AND {_eq(LABEL_PROVIDER, provider)}"


def proxy_filter(installation_id: str, proxy_id: str) -> str:
    """List filter of one proxy's instance, in whatever zone it is."""
    return f"{_eq(LABEL_INSTALLATION, installation_id)} AND {_eq(LABEL_PROXY, proxy_id)}"


def _eq(label: str, value: str) -> str:
    return f'(labels.{label} = "{value}")'


def resource_id(gce_zone: str, name: str) -> str:
    """`<gce zone>/<instance name>`: what delete needs without a lookup."""
    return f"{gce_zone}/{name}"


def parse_resource_id(rid: str) -> tuple[str, str]:
    """(gce zone, instance name); ValueError for anything else."""
    zone, sep, name = rid.partition("/")
    if not sep or not zone or not name or "/" in name:
        raise ValueError(f"resource id {rid!r}: expected <zone>/<instance>")
    return zone, name


def last_segment(url: str) -> str:
    """`.../zones/europe-west1-b` -> `europe-west1-b` (GCE returns zones as URLs)."""
    return url.rstrip("/").rsplit("/", 1)[-1]
