"""The address the local provider hands out is the one the providers config checked."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from proxyfleet.common.providers import parse_providers_config
from proxyfleet.provisioner_local.adapter import local_options
from proxyfleet.provisioner_local.proxies import LocalProxies
from proxyfleet.provisioner_local.pure.config import LocalProviderConfig


@pytest.mark.parametrize(
    ("section", "listens", "handed_out"),
    [
        ("{}", "127.0.0.1", "127.0.0.1"),
        ("{bind_host: 127.0.0.3}", "127.0.0.3", "127.0.0.3"),
        ("{bind_host: 0.0.0.0, advertise_host: 192.0.2.10}", "0.0.0.0", "192.0.2.10"),
    ],
)
def test_proxies_are_handed_out_at_the_checked_address(
    tmp_path: Path, section: str, listens: str, handed_out: str
) -> None:
    text = f"providers:\n  - {{name: l, type: local, zones: [z], local: {section}}}\n"
    settings = parse_providers_config(text, "p.yaml").get("l", LocalProviderConfig).local
    assert settings is not None
    options = local_options(settings, "inst")
    assert options.bind_host == listens
    proxies = LocalProxies(dataclasses.replace(options, state_dir=tmp_path, engine="proxy.py"))
    assert proxies.host == handed_out
