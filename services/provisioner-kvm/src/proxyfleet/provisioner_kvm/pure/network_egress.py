"""Whether a libvirt network gives its VMs exit addresses of their own. Pure: no I/O.

A `nat` network (libvirt's `default`) masquerades every VM behind its host's address: all
the host's proxies leave through one address, which health then flags as shared and grants
exclusive by `ip` lease one at a time. A bridged (`bridge`, `macvtap`-style `passthrough`,
`private`, `vepa`), `route`d or `open` network leaves each VM its own address.
"""

from __future__ import annotations

from dataclasses import dataclass
from xml.etree import ElementTree

SHARED_FORWARD_MODES = frozenset({"nat"})


@dataclass(frozen=True, slots=True)
class NetworkEgress:
    network: str
    forward: str
    """The network's forward mode ("nat", "bridge", "route", "open", ...); "" isolated."""

    @property
    def shared(self) -> bool:
        """Its VMs leave through their host's address (one exit address for all)."""
        return self.forward in SHARED_FORWARD_MODES


def network_egress(network: str, xml: str) -> NetworkEgress:
    """The egress of the network whose `XMLDesc` is `xml`: a `<forward>` without a mode is
    libvirt's default, `nat`; no `<forward>` at all is an isolated network."""
    root = ElementTree.fromstring(xml)  # noqa: S314 - libvirt's own output
    forward = root.find("forward")
    mode = "" if forward is None else forward.get("mode", "nat")
    return NetworkEgress(network=network, forward=mode)
