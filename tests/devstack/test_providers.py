"""The dev stack's providers config: valid, and its local proxies need a known exit address."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxyfleet.common.providers import parse_providers_config
from proxyfleet.devstack.providers import local_provider_yaml, squid_installed
from proxyfleet.provisioner_local.pure.config import LocalProviderConfig
from proxyfleet.provisioner_local.pure.egress_addresses import DEFAULT_EGRESS_RANGE


@pytest.mark.parametrize(
    ("engine", "exclusive"),
    [("squid", "ip"), ("proxy.py", "none"), ("auto", "ip" if squid_installed() else "none")],
)
def test_local_proxies_are_ready_once_their_address_is_known(
    engine: str, exclusive: str, tmp_path: Path
) -> None:
    text = local_provider_yaml(tmp_path / "proxies", engine, 30.0, 8443)
    local = parse_providers_config(text, "providers.yaml").get("local", LocalProviderConfig)
    assert local.egress.require_ip is True
    assert local.egress.exclusive == exclusive
    assert local.local is not None
    assert local.local.egress_range == DEFAULT_EGRESS_RANGE
    assert (local.local.engine, local.local.connect_ports) == (engine, [443, 8443])


def test_more_providers_may_follow(tmp_path: Path) -> None:
    more = "  - {name: spare, type: local, zones: [z], local: {egress_range: ''}}\n"
    text = local_provider_yaml(tmp_path, "squid", 30.0, 8443) + more
    config = parse_providers_config(text, "providers.yaml")
    assert [p.name for p in config.providers] == ["local", "spare"]
