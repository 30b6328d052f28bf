"""The fake's knobs: operation timing, booting, and where its instances leave from."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Settings:
    """Operation timing. Tests change them on the fixture's object at any time."""

    pending_s: float = 0.05
    """How long a new operation stays PENDING."""
    running_s: float = 0.2
    """How long it then stays RUNNING before its effect (a boot adds its own time)."""
    wait_timeout_s: float = 5.0
    """`operations.wait` answers by then even when not DONE (Google: about 2 minutes)."""
    boot: bool = True
    """Start a real Squid for each inserted instance (off: RUNNING with no proxy)."""
    guest_boot_s: float = 0.0
    """0: the insert's operation is DONE once Squid listens. More: DONE and RUNNING with its
    natIP at once, Squid that much later, as a real VM still running cloud-init."""
    cloud_nat_address: str = ""
    """Where an instance without an external IP leaves from: its network's Cloud NAT, one
    address every such instance shares (one with an external IP leaves from that IP).
    "": the fake picks one its instances are never given (FakeGce)."""
