"""cloud-init documents that turn a fresh VM into an authenticated Squid proxy.

Shared by the VM providers (KVM's NoCloud seed, GCE's `user-data` metadata), so every VM
runs the same Squid config as a local proxy; what differs (the guest agent, whether the
package index is refreshed) is a field of `CloudInitSpec`. Pure: no I/O.
The user-data holds the proxy's credentials (as a bcrypt hash): it must never be logged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from proxyfleet.common.domain.squid import SquidOptions, htpasswd_line, render_squid_conf

SQUID_CONF_PATH = "/etc/squid/squid.conf"
HTPASSWD_PATH = "/etc/squid/proxyfleet.htpasswd"
QEMU_GUEST_AGENT = "qemu-guest-agent"

_HOSTNAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class CloudInitSpec:
    """What differs between two proxy VMs' cloud-init."""

    proxy_id: str
    hostname: str
    username: str
    password: str = field(repr=False)
    """The proxy's basic-auth password; only its bcrypt hash goes into the user-data."""
    proxy_port: int
    connect_ports: list[int]
    ssh_authorized_keys: list[str] = field(default_factory=list)
    """Keys for the image's default user (none: nobody can log in over SSH)."""
    deny_private_destinations: bool = True
    """Squid refuses RFC 1918/CGNAT/ULA destinations (the hypervisor's own networks)."""
    source_ranges: list[str] = field(default_factory=list)
    """Client networks Squid accepts (empty: any); see `SquidOptions.source_ranges`."""
    guest_agent: str | None = QEMU_GUEST_AGENT
    """Package and unit of the guest agent the provider reads the address from (KVM);
    None where the image's own agent does (GCE's google-guest-agent)."""
    package_update: bool = False
    """Refresh the package index first: KVM images ship the packages and may have no
    mirror; cloud images (GCE) have a mirror but no Squid."""


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line strings as `|` blocks, so files stay readable."""


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # PyYAML falls back to a quoted style by itself when a block cannot represent `value`.
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def render_user_data(spec: CloudInitSpec) -> str:
    """The `#cloud-config` user-data: Squid with basic auth, the guest agent (if any), the
    hostname.

    Output differs on every call (the htpasswd line has a random salt). Never log it.
    """
    _check_hostname(spec.hostname)
    squid_conf = render_squid_conf(
        SquidOptions(
            http_port=spec.proxy_port,
            htpasswd_path=HTPASSWD_PATH,
            bind_address="0.0.0.0",
            connect_ports=list(spec.connect_ports),
            pid_file="/run/squid.pid",
            cache_log="/var/log/squid/cache.log",
            deny_private_destinations=spec.deny_private_destinations,
            source_ranges=list(spec.source_ranges),
        )
    )
    runcmd: list[list[str]] = [
        # A preinstalled squid started at boot with the stock config: load ours.
        ["systemctl", "restart", "squid"],
    ]
    if spec.guest_agent:
        # The agent starts by itself when its virtio port appears; this covers an agent
        # that cloud-init has just installed. Not `enable --now`: the agent's unit has no
        # [Install] section, and waiting for it cost 20-27 s under TCG.
        runcmd.append(["systemctl", "start", "--no-block", spec.guest_agent])
    doc: dict[str, Any] = {
        "hostname": spec.hostname,
        "preserve_hostname": False,
        "manage_etc_hosts": True,
        # Installing an already installed package is a no-op, so images that ship them work
        # without a mirror (package_update off).
        "package_update": spec.package_update,
        "package_upgrade": False,
        "packages": ["squid", *([spec.guest_agent] if spec.guest_agent else [])],
        "ssh_pwauth": False,
        "write_files": [
            {
                "path": SQUID_CONF_PATH,
                "content": squid_conf,
                "owner": "root:root",
                "permissions": "0644",
                # Deferred to after package installation: the `proxy` group (and the
                # /etc/squid directory) exist only once squid is installed.
                "defer": True,
            },
            {
                "path": HTPASSWD_PATH,
                "content": htpasswd_line(spec.username, spec.password),
                "owner": "root:proxy",
                "permissions": "0640",
                "defer": True,
            },
        ],
        "runcmd": runcmd,
    }
    if spec.ssh_authorized_keys:
        doc["ssh_authorized_keys"] = list(spec.ssh_authorized_keys)
    return "#cloud-config\n" + _dump(doc)


def render_meta_data(proxy_id: str, hostname: str) -> str:
    """NoCloud meta-data: the instance id (cloud-init runs once per id) and the hostname."""
    _check_hostname(hostname)
    return _dump({"instance-id": proxy_id, "local-hostname": hostname})


def _check_hostname(hostname: str) -> None:
    if not _HOSTNAME.fullmatch(hostname):
        raise ValueError(
            f"hostname {hostname!r}: expected 1-63 lowercase letters, digits and inner '-'"
        )


def _dump(doc: dict[str, Any]) -> str:
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=4096)
