"""The egress module's pure rules: address normalization, networks, the settings' defaults."""

from __future__ import annotations

import msgspec
import pytest

from proxyfleet.common.egress import EgressSettings, network, normalize
from proxyfleet.common.errors import ConfigError
from proxyfleet.common.providers_config import parse_providers_config


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("127.0.0.1", "127.0.0.1"),
        (" 10.1.2.3 ", "10.1.2.3"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("2001:DB8::1", "2001:db8::1"),
        ("", ""),
        ("not an address", ""),
        ("999.1.1.1", ""),
        (12345, ""),
        (None, ""),
        ("1" * 100, ""),
    ],
)
def test_normalize(raw: object, expected: str) -> None:
    assert normalize(raw) == expected


@pytest.mark.parametrize(
    ("ip", "expected"),
    [
        ("127.77.3.9", "127.77.3.0/24"),
        ("203.0.113.255", "203.0.113.0/24"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("", ""),
    ],
)
def test_network(ip: str, expected: str) -> None:
    assert network(ip) == expected


def test_defaults_and_provider_config() -> None:
    assert EgressSettings() == EgressSettings(exclusive="ip", require_ip=False)
    text = """
providers:
  - name: dev
    type: local
    zones: [a]
    local: {}
    egress: {exclusive: subnet, require_ip: true}
"""
    cfg = parse_providers_config(text, "p.yaml")
    assert cfg.providers[0].egress == EgressSettings(exclusive="subnet", require_ip=True)
    default = parse_providers_config(
        text.replace("    egress: {exclusive: subnet, require_ip: true}\n", ""), "p.yaml"
    )
    assert default.providers[0].egress.exclusive == "ip"


def test_unknown_mode_is_refused_with_the_key_named() -> None:
    text = """
providers:
  - name: dev
    type: local
    zones: [a]
    local: {}
    egress: {exclusive: host}
"""
    with pytest.raises(ConfigError, match=r"providers\[0\]\.egress\.exclusive"):
        parse_providers_config(text, "p.yaml")
    assert msgspec.json.encode(EgressSettings()) == b"{}"
