"""Helpers of the KVM tests (plain functions; the fixtures are in conftest)."""

from __future__ import annotations

from typing import Any

import msgspec

from proxyfleet.common.providers_config import KvmHost

TEST_DRIVER_URI = "test:///default"
"""libvirt's built-in test driver: a fake hypervisor in the client library."""
TEST_DRIVER_HOST = KvmHost(
    name="t1",
    zone="test-a",
    ssh_address="unused",
    ssh_key_file="unused",
    host_key="ssh-ed25519 unused",
    storage_pool="default-pool",
    network="default",
    domain_type="qemu",
)
"""A host whose SSH settings are never used: the test driver is reached directly."""


def kvm_provider(name: str, host: KvmHost, **kvm: Any) -> dict[str, Any]:
    """One `providers:` entry of type kvm serving `host`'s zone with `host` (as a dict, for
    yaml.safe_dump); `kvm` holds the rest of the kvm section (images, default_image, ...)."""
    return {
        "name": name,
        "type": "kvm",
        "zones": [host.zone],
        "kvm": {"hosts": [msgspec.to_builtins(host)], **kvm},
    }
