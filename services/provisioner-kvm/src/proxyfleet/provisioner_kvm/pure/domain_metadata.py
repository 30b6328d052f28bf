"""Our `<metadata>` element in a proxy VM's domain: who the domain belongs to and what
registers its proxy again, written into the domain XML and read back from libvirt's.

Parsing is only ever of libvirt's output (or of our own metadata as libvirt returns it).
"""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET  # builds XML; parses only libvirt's output
from dataclasses import dataclass, field

from proxyfleet.provisioner_kvm.pure.xml_tree import parse_or_none, sub_element

METADATA_URI = "https://proxyfleet.dev/xmlns/libvirt/1"
"""Namespace of our `<metadata>` element; GC finds our domains by it."""
METADATA_PREFIX = "proxyfleet"
"""Prefix libvirt uses for METADATA_URI in the domain XML."""


@dataclass(frozen=True, slots=True)
class Rebuild:
    """What the metadata keeps so the proxy can be registered again from the domain after
    a store reset. The password is on the host already (the seed ISO's user-data)."""

    zone: str = ""
    username: str = ""
    password: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    placement: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DomainIdentity:
    """Who a domain belongs to, as recorded in its metadata."""

    proxy_id: str
    installation_id: str
    created_at: float = 0.0
    """Unix seconds from the metadata; 0.0 when absent or unreadable (counts as old)."""
    rebuild: Rebuild = field(default_factory=Rebuild)
    """Empty for a domain made before the metadata carried it (not adoptable)."""


def metadata_element_xml(
    proxy_id: str,
    installation_id: str,
    created_at: float | None = None,
    rebuild: Rebuild | None = None,
) -> str:
    """Our metadata element as given to `virDomain.setMetadata` (libvirt adds the namespace).

    Without `created_at` the element has no creation time (read back as 0.0).
    """
    element = instance_element(proxy_id, installation_id, created_at, rebuild=rebuild)
    return ET.tostring(element, encoding="unicode")


def parse_metadata(xml_text: str) -> DomainIdentity | None:
    """The identity in our metadata element, with or without namespace; None if not ours.

    libvirt's `metadata()` returns the element without its namespace declaration, so
    elements are matched by local name. Malformed XML or a missing field gives None.
    """
    root = parse_or_none(xml_text)
    if root is None:
        # A prefix without its declaration (`<proxyfleet:instance>`): declare it and retry.
        body = _XML_DECL.sub("", xml_text, count=1)
        root = parse_or_none(f'<w xmlns:{METADATA_PREFIX}="{METADATA_URI}">{body}</w>')
        if root is None or len(root) != 1:
            return None
        root = root[0]
    return _identity_of(root) if _is_ours(root) else None


def identity_from_domain_xml(domain_xml: str) -> DomainIdentity | None:
    """The identity in a full domain XML (as `XMLDesc()` returns it), or None if not ours."""
    root = parse_or_none(domain_xml)
    if root is None:
        return None
    metadata = root.find("metadata")
    if metadata is None:
        return None
    for child in metadata:
        if _is_ours(child) and (identity := _identity_of(child)) is not None:
            return identity
    return None


_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>")
_PASSWORD = re.compile(r"(<(?:[\w-]+:)?password>)[^<]*(</)")


def redact_xml(text: str) -> str:
    """The XML with our metadata's password hidden, for trace logs."""
    return _PASSWORD.sub(r"\1***\2", text)


def instance_element(
    proxy_id: str,
    installation_id: str,
    created_at: float | None,
    prefix: str = "",
    rebuild: Rebuild | None = None,
) -> ET.Element:
    """Our `<instance>` element; with a `prefix`, in our namespace under that prefix."""
    # A literal `prefix:` tag plus its xmlns attribute: ElementTree writes both as given,
    # without touching its process-wide namespace registry.
    p = f"{prefix}:" if prefix else ""
    attrs = {f"xmlns:{prefix}": METADATA_URI} if prefix else {}
    inst = ET.Element(f"{p}instance", attrs)
    sub_element(inst, f"{p}proxy-id", proxy_id)
    sub_element(inst, f"{p}installation-id", installation_id)
    if created_at is not None:
        # repr() of a float reads back to exactly the same float.
        sub_element(inst, f"{p}created-at", repr(float(created_at)))
    if rebuild is not None:
        sub_element(inst, f"{p}zone", rebuild.zone)
        sub_element(inst, f"{p}username", rebuild.username)
        sub_element(inst, f"{p}password", rebuild.password)
        sub_element(inst, f"{p}labels", json.dumps(rebuild.labels, sort_keys=True))
        sub_element(inst, f"{p}placement", json.dumps(rebuild.placement, sort_keys=True))
    return inst


def _identity_of(element: ET.Element) -> DomainIdentity | None:
    fields: dict[str, str] = {}
    for child in element:
        fields.setdefault(_local(child.tag), (child.text or "").strip())
    proxy_id = fields.get("proxy-id")
    installation_id = fields.get("installation-id")
    if not proxy_id or not installation_id:
        return None
    return DomainIdentity(
        proxy_id=proxy_id,
        installation_id=installation_id,
        created_at=_seconds(fields.get("created-at", "")),
        rebuild=Rebuild(
            zone=fields.get("zone", ""),
            username=fields.get("username", ""),
            password=fields.get("password", ""),
            labels=_str_map(fields.get("labels", "")),
            placement=_str_map(fields.get("placement", "")),
        ),
    )


def _str_map(text: str) -> dict[str, str]:
    # Unreadable maps read as empty: the domain is still listed (and GC still sees it).
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}


def _seconds(text: str) -> float:
    # A missing or garbled time must not hide the domain from GC: it counts as old, and
    # GC still deletes only domains of this installation whose proxy is gone.
    try:
        value = float(text)
    except ValueError:
        return 0.0
    return value if math.isfinite(value) and value >= 0 else 0.0


def _is_ours(element: ET.Element) -> bool:
    # No namespace is what libvirt's metadata() returns; any other namespace is another
    # application's element that happens to share the local name.
    tag = element.tag
    if not isinstance(tag, str) or _local(tag) != "instance":
        return False
    return not tag.startswith("{") or tag.startswith(f"{{{METADATA_URI}}}")


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]
