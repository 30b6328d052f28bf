"""Local proxies' loopback exit addresses: the range setting, the port rule, the placement."""

from __future__ import annotations

import ipaddress

import pytest

from proxyfleet.common.core.errors import ConfigError, InvalidInput
from proxyfleet.common.providers import INVALID_PLACEMENT, parse_providers_config, validator_for
from proxyfleet.provisioner_local.pure.config import LocalProviderConfig
from proxyfleet.provisioner_local.pure.egress_addresses import (
    DEFAULT_EGRESS_RANGE,
    address_for_port,
    check_egress_range,
    placement_address,
)


def config(local: str) -> str:
    return f"providers:\n  - {{name: dev, type: local, zones: [z], local: {local}}}\n"


def test_each_port_has_its_own_address_the_same_every_time() -> None:
    ports = (20000, 29999)
    addresses = [address_for_port(DEFAULT_EGRESS_RANGE, ports, p) for p in range(20000, 30000)]
    assert len(set(addresses)) == 10000
    assert addresses[0] == "127.77.0.1"
    assert addresses[-1] == "127.77.39.16"
    assert address_for_port(DEFAULT_EGRESS_RANGE, ports, 20257) == addresses[257]
    network = ipaddress.IPv4Network(DEFAULT_EGRESS_RANGE)
    assert all(ipaddress.IPv4Address(a) in network for a in addresses)


def test_a_small_range_fits_its_ports_exactly() -> None:
    check_egress_range("127.5.5.0/29", (100, 105))  # 8 addresses: 6 usable, 6 ports
    used = [address_for_port("127.5.5.0/29", (100, 105), p) for p in range(100, 106)]
    assert used == [f"127.5.5.{i}" for i in range(1, 7)]
    with pytest.raises(ValueError, match="outside port_range"):
        address_for_port("127.5.5.0/29", (100, 105), 106)
    with pytest.raises(ValueError, match=r"no address in 127\.5\.5\.0/29"):
        address_for_port("127.5.5.0/29", (100, 106), 106)


def test_an_empty_range_leaves_the_choice_to_the_kernel() -> None:
    check_egress_range("", (1, 65535))
    assert address_for_port("", (20000, 29999), 20001) == ""


def test_the_default_is_on_and_empty_turns_it_off() -> None:
    default = parse_providers_config(config("{}"), "p.yaml").get("dev", LocalProviderConfig).local
    assert default is not None
    assert default.egress_range == DEFAULT_EGRESS_RANGE == "127.77.0.0/16"
    off = (
        parse_providers_config(config('{egress_range: ""}'), "p.yaml")
        .get("dev", LocalProviderConfig)
        .local
    )
    assert off is not None
    assert off.egress_range == ""


@pytest.mark.parametrize(
    ("local", "expected"),
    [
        ("{egress_range: 10.77.0.0/16}", "inside 127.0.0.0/8"),
        ("{egress_range: 126.0.0.0/7}", "inside 127.0.0.0/8"),
        ("{egress_range: 127.77.0.1/16}", "host bits zero"),
        ("{egress_range: 127.77.0.0}", "fewer than the 10000 ports"),
        ("{egress_range: 'fe80::/64'}", "expected an IPv4 network"),
        ("{egress_range: 127.77.0.0/24}", "254 usable addresses, fewer than the 10000 ports"),
        ("{egress_range: 127.77.0.0/24, port_range: [1000, 1300]}", "a /23 or larger"),
    ],
)
def test_a_bad_range_is_refused_naming_the_key(local: str, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_providers_config(config(local), "conf/p.yaml")
    message = str(err.value)
    assert message.startswith("conf/p.yaml: key providers[0].local.egress_range: ")
    assert expected in message


def test_a_range_as_large_as_the_ports_is_accepted() -> None:
    text = config("{egress_range: 127.77.0.0/24, port_range: [1000, 1253]}")
    local = parse_providers_config(text, "p.yaml").get("dev", LocalProviderConfig).local
    assert local is not None
    assert local.egress_range == "127.77.0.0/24"


def test_a_placement_may_name_any_loopback_address() -> None:
    assert placement_address({}) == ""
    assert placement_address({"egress_address": ""}) == ""
    assert placement_address({"egress_address": "127.77.9.9"}) == "127.77.9.9"
    assert placement_address({"egress_address": "127.0.0.1"}) == "127.0.0.1"


@pytest.mark.parametrize(
    ("placement", "expected"),
    [
        ({"egress_address": "10.0.0.1"}, "placement.egress_address: expected an IPv4 address"),
        ({"egress_address": "::1"}, "placement.egress_address"),
        ({"egress_address": "127.77.9.9/32"}, "placement.egress_address"),
        ({"egress_address": "localhost"}, "got 'localhost'"),
        ({"image": "debian"}, "unknown key(s) image; expected only egress_address"),
    ],
)
def test_the_api_refuses_a_bad_placement_naming_the_key(
    placement: dict[str, str], expected: str
) -> None:
    provider = parse_providers_config(config("{}"), "p.yaml").get("dev")
    validator_for("local").validate(provider, {"egress_address": "127.77.9.9"})
    with pytest.raises(InvalidInput) as err:
        validator_for("local").validate(provider, placement)
    assert err.value.code == INVALID_PLACEMENT
    assert str(err.value).startswith("provider 'dev': ")
    assert expected in str(err.value)


def test_source_ranges_are_checked() -> None:
    text = """
providers:
  - name: local
    type: local
    zones: [dev]
    local: {source_ranges: [127.0.0.1, nope]}
"""
    with pytest.raises(ConfigError, match=r"providers\[0\].local.source_ranges: 'nope'"):
        parse_providers_config(text, "providers.yaml")
