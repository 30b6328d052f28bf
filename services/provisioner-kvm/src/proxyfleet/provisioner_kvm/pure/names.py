"""Deterministic names of everything the KVM provisioner creates for a proxy.

The same proxy id always maps to the same domain and volume names, so a create that is
retried after a crash adopts what the first attempt made instead of making a second one.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

from proxyfleet.common.core.ids import resource_name

if TYPE_CHECKING:
    from proxyfleet.provisioner_kvm.pure.placement import ImageRef

_NOT_NAME_CHARS = re.compile(r"[^a-z0-9-]+")
_KEY_MAX = 40
"""Bound on the sanitised image key, so a volume name stays well under file name limits."""


def domain_name(proxy_id: str) -> str:
    """The libvirt domain name of a proxy's VM: `pf-<proxy_id>`."""
    return resource_name(proxy_id)


def proxy_id_from_domain_name(name: str) -> str | None:
    """The proxy id in a domain name made by `domain_name`, or None for any other name."""
    prefix = resource_name("")
    if not name.startswith(prefix) or len(name) == len(prefix):
        return None
    return name[len(prefix) :]


def overlay_volume_name(proxy_id: str) -> str:
    """The VM's own disk: a qcow2 overlay on the shared base image."""
    return f"{domain_name(proxy_id)}-disk.qcow2"


def seed_volume_name(proxy_id: str) -> str:
    """The VM's NoCloud seed ISO (cloud-init user-data, meta-data, network-config)."""
    return f"{domain_name(proxy_id)}-seed.iso"


def base_volume_name(image: ImageRef) -> str:
    """The shared base image volume: `pf-base-<key>-<digest12>.<format>`.

    The digest is part of the name so that changing an image's URL or checksum in the
    config uploads a new base volume instead of silently reusing the old one under
    overlays that were built on it.
    """
    source = image.sha256 or hashlib.sha256(image.url.encode()).hexdigest()
    key = _NOT_NAME_CHARS.sub("-", image.key.lower()).strip("-")[:_KEY_MAX].strip("-")
    return f"pf-base-{key or 'image'}-{source[:12]}.{image.format}"


def resource_id(host_name: str, proxy_id: str) -> str:
    """The provider resource id of a proxy's VM: `<host>/<domain name>`."""
    return f"{host_name}/{domain_name(proxy_id)}"


def parse_resource_id(rid: str) -> tuple[str, str]:
    """Split a resource id made by `resource_id` into (host name, domain name).

    Raises ValueError when `rid` is not of that form.
    """
    host, sep, domain = rid.partition("/")
    if not sep or not host or "/" in domain or proxy_id_from_domain_name(domain) is None:
        raise ValueError(f"resource id {rid!r}: expected '<host>/pf-<proxy id>'")
    return host, domain
