"""The dev stack's providers config: one local provider whose proxies run on this machine;
and the end of those proxies once the stack's own Redis is gone."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path


def local_provider_yaml(state_dir: Path, engine: str, boot_timeout: float, target_port: int) -> str:
    """The providers config's text up to its local provider (more entries may follow)."""
    return (
        "# Written by proxyfleet-dev: the embedded default, real proxy processes here.\n"
        "providers:\n"
        "  - name: local\n"
        "    type: local\n"
        "    zones: [local-a, local-b]\n"
        f"    boot_timeout: {boot_timeout}\n" + _egress(engine) + "    local:\n"
        f"      state_dir: {state_dir}\n"
        f"      engine: {engine}\n"
        f"      connect_ports: [443, {target_port}]\n"
    )


def _egress(engine: str) -> str:
    """The target echoes each proxy's exit address, so a proxy is ready once it is known.
    proxy.py proxies all leave from 127.0.0.1 (it cannot choose a source address, see
    docs/egress.md): leased by address they would go out one at a time."""
    if engine == "proxy.py" or (engine == "auto" and not squid_installed()):
        return "    egress: {require_ip: true, exclusive: none}  # proxy.py: one shared address\n"
    return "    egress: {require_ip: true}  # each Squid leaves from its own 127.77.x.y\n"


def squid_installed() -> bool:
    """Whether the local provider's `auto` engine finds Squid (where it looks for it)."""
    return bool(shutil.which("squid") or shutil.which("squid", path="/usr/sbin:/sbin"))


def stop_local_proxies(state_dir: Path) -> int:
    """Kill every proxy process the local provider left under state_dir and remove it."""
    stopped = 0
    for marker in state_dir.glob("*/*/managed.json"):
        try:
            pid = int(json.loads(marker.read_text()).get("pid", 0))
        except (OSError, ValueError):
            continue
        if pid > 0:
            try:
                os.killpg(pid, signal.SIGKILL)
                stopped += 1
            except (ProcessLookupError, PermissionError):
                pass
    shutil.rmtree(state_dir, ignore_errors=True)
    return stopped
