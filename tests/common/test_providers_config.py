from __future__ import annotations

from pathlib import Path

import pytest

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.providers import load_providers_config, parse_providers_config
from proxyfleet.provisioner_local.pure.config import LocalProviderConfig

GOOD = """
providers:
  - name: local
    type: local
    zones: [local-a, local-b]
    boot_timeout: 30
    local:
      state_dir: /tmp/pf
      port_range: [21000, 21100]
      connect_ports: [443, 8443]
"""


def test_good_config_parses() -> None:
    cfg = parse_providers_config(GOOD, "p.yaml")
    local = cfg.get("local", LocalProviderConfig)
    assert local.zones == ["local-a", "local-b"]
    assert local.boot_timeout == 30
    assert local.local is not None
    assert local.local.connect_ports == [443, 8443]
    assert local.max_proxies is None
    capped = parse_providers_config(GOOD.replace("boot_timeout: 30", "max_proxies: 50"), "p")
    assert capped.get("local").max_proxies == 50


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GOOD.replace("boot_timeout: 30", "boot_timout: 30"), "key providers[0]: "),
        (GOOD.replace("boot_timeout: 30", "boot_timeout: -3"), "providers[0].boot_timeout"),
        (GOOD.replace("    type: local\n", ""), "missing required field `type`"),
        (GOOD.replace("type: local", "type: vmware"), "providers[0].type"),
        (GOOD.replace("zones: [local-a, local-b]", "zones: []"), "expected at least one zone"),
        (GOOD.replace("[21000, 21100]", "[21100, 21000]"), "low <= high"),
        (GOOD.replace("[443, 8443]", "[443, 70000]"), "connect_ports"),
        (GOOD.replace("name: local", "name: Local_1"), "providers[0].name"),
        (GOOD.replace("boot_timeout: 30", "max_proxies: 0"), "providers[0].max_proxies"),
        (GOOD.replace("boot_timeout: 30", "max_proxies: 2.5"), "providers[0].max_proxies"),
        ("providers: [", "not valid YAML"),
        ("providers: []", "at least one provider"),
        (GOOD + "  - name: local\n    type: local\n    zones: [a]\n    local: {}\n", "duplicate"),
    ],
)
def test_errors_name_file_key_and_expectation(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_providers_config(text, "conf/providers.yaml")
    message = str(err.value)
    assert message.startswith("conf/providers.yaml: ")
    assert expected in message


def test_unknown_key_is_named() -> None:
    with pytest.raises(ConfigError, match=r"unknown field `boot_timout`"):
        parse_providers_config(GOOD.replace("boot_timeout", "boot_timout"), "p.yaml")


def test_missing_local_section_for_local_type() -> None:
    text = "providers:\n  - name: a\n    type: local\n    zones: [z]\n"
    with pytest.raises(ConfigError, match=r"providers\[0\]\.local: required"):
        parse_providers_config(text, "p.yaml")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_providers_config(str(tmp_path / "nope.yaml"))
