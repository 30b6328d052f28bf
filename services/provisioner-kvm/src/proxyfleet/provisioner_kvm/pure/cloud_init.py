"""Moved to `proxyfleet.common.domain.cloud_init` (shared with the GCP provider); this name stays
for code written against the old path (the fake GCE's tests) until it moves too."""

from __future__ import annotations

from proxyfleet.common.domain.cloud_init import (
    HTPASSWD_PATH,
    QEMU_GUEST_AGENT,
    SQUID_CONF_PATH,
    CloudInitSpec,
    render_meta_data,
    render_user_data,
)

__all__ = [
    "HTPASSWD_PATH",
    "QEMU_GUEST_AGENT",
    "SQUID_CONF_PATH",
    "CloudInitSpec",
    "render_meta_data",
    "render_user_data",
]
