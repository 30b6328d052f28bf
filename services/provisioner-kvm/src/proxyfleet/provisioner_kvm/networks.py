"""What each host's libvirt network means for its proxies' exit addresses, read once per
host on its first create: a NAT network is logged as a warning and shown as a gauge, so an
operator learns before health flags the shared address (docs/egress.md)."""

from __future__ import annotations

from proxyfleet.common.core.errors import ProviderError
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.provisioner_kvm.host import HostSession
from proxyfleet.provisioner_kvm.metrics import NETWORK_SHARED_EGRESS
from proxyfleet.provisioner_kvm.pure.network_egress import NetworkEgress, network_egress

log = get_logger("proxyfleet.kvm")


class HostNetworks:
    def __init__(self) -> None:
        self._known: dict[str, NetworkEgress] = {}

    async def survey(self, session: HostSession) -> NetworkEgress | None:
        """The host's network egress (read once; None while it cannot be read, and a create
        goes on regardless: this only informs)."""
        host = session.host
        if (known := self._known.get(host.name)) is not None:
            return known
        try:
            xml = await session.run(
                "networkGetXMLDesc",
                lambda c: c.networkLookupByName(host.network).XMLDesc(0),
                network=host.network,
            )
        except ProviderError as exc:
            log.debug("kvm.network_unread", host=host.name, network=host.network, error=str(exc))
            return None
        egress = self._known[host.name] = network_egress(host.network, xml)
        NETWORK_SHARED_EGRESS.labels(host.name, host.network).set(1 if egress.shared else 0)
        if egress.shared:
            log.warning(
                "kvm.egress_shared_by_nat",
                host=host.name,
                network=host.network,
                hint="every VM of this host leaves through the host's address; use a bridged"
                " or routed network for an exit address per proxy",
            )
        return egress
