"""How the local provider runs its proxies: where their folders are, which ports and exit
addresses they take, and the engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from proxyfleet.provisioner_local.pure import egress_addresses as local_egress


@dataclass(frozen=True, slots=True)
class LocalOptions:
    state_dir: Path
    installation_id: str
    bind_host: str = "127.0.0.1"
    advertise_host: str = ""
    """Where clients reach the proxies ("": bind_host); the providers config checks it."""
    port_range: tuple[int, int] = (20000, 29999)
    engine: str = "auto"
    """auto, squid or proxy.py (see commands.resolve_engine)."""
    connect_ports: list[int] = field(default_factory=lambda: [443])
    source_ranges: list[str] = field(default_factory=list)
    """Client networks Squid accepts (empty: any)."""
    egress_range: str = local_egress.DEFAULT_EGRESS_RANGE
    """127/8 network of the proxies' exit addresses, one per port ("": all 127.0.0.1)."""
    start_timeout: float = 10.0
    """Seconds a new proxy process has to accept TCP connections."""
    stop_grace: float = 5.0
    """Seconds between SIGTERM and SIGKILL when a proxy is deleted."""
