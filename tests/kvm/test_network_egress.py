"""Whether a host's libvirt network gives each VM its own exit address: the pure reading of
a network's XML, and the provider's survey through libvirt's test driver (real libvirt API
and XML), which a NAT network turns into a warning and a gauge."""

from __future__ import annotations

import secrets

import libvirt
import msgspec
import pytest
from prometheus_client import REGISTRY
from tests.kvm.helpers import TEST_DRIVER_HOST, TEST_DRIVER_URI

from proxyfleet.provisioner_kvm.host import DirectConnector, HostSession
from proxyfleet.provisioner_kvm.networks import HostNetworks
from proxyfleet.provisioner_kvm.pure.network_egress import network_egress


@pytest.mark.parametrize(
    ("forward", "mode", "shared"),
    [
        ("<forward mode='nat'/>", "nat", True),
        ("<forward/>", "nat", True),  # libvirt's default forward mode
        ("<forward mode='bridge'/>", "bridge", False),
        ("<forward mode='route'/>", "route", False),
        ("<forward mode='open'/>", "open", False),
        ("", "", False),  # isolated: no way out at all, nothing shared
    ],
)
def test_only_a_nat_network_shares_its_hosts_address(forward: str, mode: str, shared: bool) -> None:
    egress = network_egress("n", f"<network><name>n</name>{forward}</network>")
    assert (egress.forward, egress.shared) == (mode, shared)


def _gauge(host: str, network: str) -> float | None:
    return REGISTRY.get_sample_value(
        "proxyfleet_kvm_network_shared_egress", {"host": host, "network": network}
    )


async def test_the_survey_reads_each_hosts_network_once_through_libvirt() -> None:
    bridged = f"pf-br-{secrets.token_hex(3)}"
    conn = libvirt.open(TEST_DRIVER_URI)
    net = conn.networkDefineXML(
        f"<network><name>{bridged}</name><forward mode='bridge'/>"
        f"<bridge name='{bridged[:12]}'/></network>"
    )
    try:
        networks = HostNetworks()
        nat_host = TEST_DRIVER_HOST  # the test driver's `default` network is a NAT one
        session = HostSession(nat_host, DirectConnector(TEST_DRIVER_URI))
        got = await networks.survey(session)
        assert got is not None
        assert (got.forward, got.shared) == ("nat", True)
        assert _gauge(nat_host.name, nat_host.network) == 1

        other = msgspec.structs.replace(nat_host, name="br-host", network=bridged)
        bridged_session = HostSession(other, DirectConnector(TEST_DRIVER_URI))
        got = await networks.survey(bridged_session)
        assert got is not None
        assert (got.forward, got.shared) == ("bridge", False)
        assert _gauge("br-host", bridged) == 0

        net.undefine()
        # Read once: the host's answer is kept, a later create asks libvirt nothing.
        again = await networks.survey(bridged_session)
        assert again == got
        await session.close()
        await bridged_session.close()
    finally:
        if bridged in conn.listDefinedNetworks():
            net.undefine()
        conn.close()


async def test_a_network_that_cannot_be_read_blocks_nothing() -> None:
    host = msgspec.structs.replace(TEST_DRIVER_HOST, network="no-such-net")
    session = HostSession(host, DirectConnector(TEST_DRIVER_URI))
    assert await HostNetworks().survey(session) is None
    await session.close()
