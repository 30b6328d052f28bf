"""What a dev stack runs and how: ports, intervals, the proxy engine, more services."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Printer = Callable[[str], None]


@dataclass
class StackOptions:
    base_dir: Path
    """Folder for every runtime file (.dev by default): data, logs, tokens, proxies."""
    api_port: int = 8080
    """API port; a free one is picked when it is taken."""
    gateway_port: int = 8899
    """The gateway's proxy port; a free one is picked when it is taken."""
    gateway_socks_port: int = 1080
    """The gateway's SOCKS5 port; a free one is picked when it is taken."""
    nats_url: str = ""
    """Use this NATS instead of starting one."""
    redis_url: str = ""
    """Use this Redis instead of starting one."""
    health_interval: float = 2.0
    """Seconds between two probes of one proxy."""
    gc_interval: float = 10.0
    gc_min_age: float = 30.0
    pools_interval: float = 2.0
    """Seconds between two passes of the pool controller."""
    cooldown: float = 10.0
    """Lease cooldown after release (short in the dev stack)."""
    boot_timeout: float = 30.0
    engine: str = "auto"
    """Local proxy engine: auto, squid or proxy.py."""
    log_level: str = "info"
    installation_id: str = "dev"
    echo: Printer | None = print
    """Where prefixed service output goes (None: only to the log files)."""
    extra_args: dict[str, list[str]] = field(default_factory=dict)
    """More command-line flags per service name (api, provisioner, health, gc, pools)."""
    target_host: str = "127.0.0.1"
    """Address the HTTPS target listens on (and its certificate names). VMs reach the
    target only on an address of theirs, such as a libvirt network's bridge."""
    target_port: int = 0
    """Port of the HTTPS target (0: a free one)."""
    extra_providers: str = ""
    """More entries of the providers config's `providers:` list (YAML, indented by two)."""
    extra_config: str = ""
    """More top-level sections of the providers config (YAML), such as `pools:`."""
    extra_services: dict[str, list[str]] = field(default_factory=dict)
    """More services to start, name -> command line (another provider's provisioner)."""
    tied: bool = False
    """Servers and services end when this process does, even SIGKILLed (tie.py): for
    `proxyfleet-dev run`, whose main thread starts them and lives as long as it does."""

    @classmethod
    def on_free_ports(cls, base_dir: Path, **overrides: Any) -> StackOptions:
        """Options whose API and gateway ports are picked free (0), for a stack that runs
        beside others (tests, benchmarks): the defaults (8080, 8899, 1080) are checked and
        then bound, a window in which another stack may take them."""
        ports = {"api_port": 0, "gateway_port": 0, "gateway_socks_port": 0}
        return cls(base_dir=base_dir, **(ports | overrides))
