"""Identifiers: time-ordered, lowercase, valid as Kubernetes, GCE and libvirt names."""

from __future__ import annotations

import secrets
import time


def new_id(prefix: str) -> str:
    """`p` + 11 hex digits of milliseconds + 8 random hex digits: sortable by creation."""
    return f"{prefix}{int(time.time() * 1000):011x}{secrets.token_hex(4)}"


def new_proxy_id() -> str:
    return new_id("p")


def new_lease_id() -> str:
    return new_id("l")


def new_event_id() -> str:
    return new_id("e")


def resource_name(proxy_id: str) -> str:
    """Deterministic resource name for a proxy: creating twice adopts, never duplicates."""
    return f"pf-{proxy_id}"
