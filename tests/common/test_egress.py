"""The egress module's pure rules: address normalization, networks, the settings' defaults."""

from __future__ import annotations

import msgspec
import pytest

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.domain.egress import EgressSettings, decide_egress, network, normalize
from proxyfleet.common.providers import parse_providers_config


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


@pytest.mark.parametrize(
    ("current", "pending", "pending_n", "observed", "expected"),
    [
        # (ip, pending, pending_n, changed, dirty) after the probe; confirm_after = 2
        ("1.1.1.1", "", 0, "", ("1.1.1.1", "", 0, False, False)),
        ("1.1.1.1", "2.2.2.2", 1, "", ("1.1.1.1", "2.2.2.2", 1, False, False)),
        ("1.1.1.1", "", 0, "1.1.1.1", ("1.1.1.1", "", 0, False, False)),
        ("1.1.1.1", "2.2.2.2", 1, "1.1.1.1", ("1.1.1.1", "", 0, False, True)),
        ("", "", 0, "1.1.1.1", ("1.1.1.1", "", 0, True, True)),
        ("", "", 0, "", ("", "", 0, False, False)),
        ("1.1.1.1", "", 0, "2.2.2.2", ("1.1.1.1", "2.2.2.2", 1, False, True)),
        ("1.1.1.1", "2.2.2.2", 1, "2.2.2.2", ("2.2.2.2", "", 0, True, True)),
        ("1.1.1.1", "2.2.2.2", 1, "3.3.3.3", ("1.1.1.1", "3.3.3.3", 1, False, True)),
    ],
)
def test_decide_egress(
    current: str,
    pending: str,
    pending_n: int,
    observed: str,
    expected: tuple[str, str, int, bool, bool],
) -> None:
    step = decide_egress(current, pending, pending_n, observed, confirm_after=2)
    assert (step.ip, step.pending, step.pending_n, step.changed, step.dirty) == expected


def test_decide_egress_confirms_after_n_in_a_row_and_a_flap_never_does() -> None:
    def run(observed: list[str], confirm_after: int) -> list[bool]:
        ip, pending, n, changes = "1.1.1.1", "", 0, []
        for seen in observed:
            step = decide_egress(ip, pending, n, seen, confirm_after)
            ip, pending, n = step.ip, step.pending, step.pending_n
            changes.append(step.changed)
        return changes

    assert run(["2.2.2.2"] * 3, 3) == [False, False, True]
    assert run(["2.2.2.2", "", "2.2.2.2"], 2) == [False, False, True]  # unknown: no reset
    assert not any(run(["2.2.2.2", "1.1.1.1"] * 10, 2))
    assert run(["2.2.2.2"], 1) == [True]
