"""Helpers of the KVM tests (plain functions; the fixtures are in conftest)."""

from __future__ import annotations

from typing import Any

import msgspec

from proxyfleet.common.providers_config import KvmHost


def kvm_provider(name: str, host: KvmHost, **kvm: Any) -> dict[str, Any]:
    """One `providers:` entry of type kvm serving `host`'s zone with `host` (as a dict, for
    yaml.safe_dump); `kvm` holds the rest of the kvm section (images, default_image, ...)."""
    return {
        "name": name,
        "type": "kvm",
        "zones": [host.zone],
        "kvm": {"hosts": [msgspec.to_builtins(host)], **kvm},
    }
