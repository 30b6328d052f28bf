"""Identifiers: time-ordered, lowercase, valid as Kubernetes, GCE and libvirt names."""

from __future__ import annotations

import secrets
import time

LEASE_RANDOM_BYTES = 12
"""A lease id (with its epoch) is what a holder acts with: 96 random bits, not guessable."""


def new_id(prefix: str, random_bytes: int = 4) -> str:
    """`p` + 11 hex digits of milliseconds + 8 random hex digits (by default): sortable by
    creation."""
    return f"{prefix}{int(time.time() * 1000):011x}{secrets.token_hex(random_bytes)}"


def new_proxy_id() -> str:
    return new_id("p")


def new_lease_id() -> str:
    """`l` + 11 hex digits of milliseconds + 24 random hex digits."""
    return new_id("l", LEASE_RANDOM_BYTES)


def new_event_id() -> str:
    return new_id("e")


def resource_name(proxy_id: str) -> str:
    """Deterministic resource name for a proxy: creating twice adopts, never duplicates."""
    return f"pf-{proxy_id}"
