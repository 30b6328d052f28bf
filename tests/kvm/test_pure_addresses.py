from __future__ import annotations

from typing import Any

import pytest

from proxyfleet.provisioner_kvm.pure.addresses import address_from_agent, address_from_leases

MAC = "52:54:00:ab:cd:ef"

# The shape of virDomain.interfaceAddresses(VIR_DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT).
AGENT: dict[str, dict[str, Any]] = {
    "lo": {
        "hwaddr": "00:00:00:00:00:00",
        "addrs": [
            {"type": 0, "addr": "127.0.0.1", "prefix": 8},
            {"type": 1, "addr": "::1", "prefix": 128},
        ],
    },
    "docker0": {
        "hwaddr": "02:42:11:22:33:44",
        "addrs": [{"type": 0, "addr": "172.17.0.1", "prefix": 16}],
    },
    "enp1s0": {
        "hwaddr": MAC.upper(),
        "addrs": [
            {"type": 1, "addr": "fe80::5054:ff:feab:cdef", "prefix": 64},
            {"type": 0, "addr": "169.254.10.1", "prefix": 16},
            {"type": 0, "addr": "192.168.122.57", "prefix": 24},
        ],
    },
}


def test_agent_picks_the_interface_with_the_mac() -> None:
    assert address_from_agent(AGENT, MAC) == "192.168.122.57"


def test_agent_without_mac_takes_the_first_non_loopback() -> None:
    assert address_from_agent(AGENT, None) == "172.17.0.1"


def test_agent_with_unknown_mac_finds_nothing() -> None:
    assert address_from_agent(AGENT, "52:54:00:00:00:01") is None


@pytest.mark.parametrize(
    "interfaces",
    [
        {},
        {"lo": AGENT["lo"]},
        {"eth0": {"hwaddr": MAC, "addrs": []}},
        {"eth0": {"hwaddr": MAC, "addrs": None}},
        {"eth0": {"hwaddr": MAC, "addrs": [{"type": 1, "addr": "2001:db8::5", "prefix": 64}]}},
        {"eth0": {"hwaddr": MAC, "addrs": [{"type": 0, "addr": "169.254.3.4", "prefix": 16}]}},
        {"eth0": {"hwaddr": MAC, "addrs": [{"type": 0, "addr": "not-an-ip", "prefix": 24}]}},
    ],
)
def test_agent_without_a_usable_ipv4(interfaces: dict[str, dict[str, Any]]) -> None:
    assert address_from_agent(interfaces, MAC) is None


# The shape of virNetwork.DHCPLeases().
LEASES: list[dict[str, Any]] = [
    {"mac": MAC, "ipaddr": "192.168.122.10", "type": 0, "expirytime": 1000, "prefix": 24},
    {"mac": MAC, "ipaddr": "192.168.122.11", "type": 0, "expirytime": 3000, "prefix": 24},
    {"mac": MAC, "ipaddr": "fd00::11", "type": 1, "expirytime": 9000, "prefix": 64},
    {"mac": "52:54:00:00:00:02", "ipaddr": "192.168.122.99", "type": 0, "expirytime": 5000},
]


def test_leases_newest_lease_of_the_mac_wins() -> None:
    assert address_from_leases(LEASES, MAC.upper()) == "192.168.122.11"


def test_leases_without_mac_take_the_newest() -> None:
    assert address_from_leases(LEASES, None) == "192.168.122.99"


def test_leases_none_for_the_mac() -> None:
    assert address_from_leases(LEASES, "52:54:00:00:00:03") is None
    assert address_from_leases([], MAC) is None
