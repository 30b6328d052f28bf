"""The `gcp` section of the providers config: checked at start, errors naming the key."""

from __future__ import annotations

import pytest

from proxyfleet.common.core.errors import ConfigError, InvalidInput
from proxyfleet.common.providers import parse_providers_config
from proxyfleet.provisioner_gcp.pure.config import (
    GcpPlacementValidator,
    GcpProviderConfig,
    is_pinned,
)

GCP = """
providers:
  - name: cloud
    type: gcp
    zones: [eu-1, eu-2]
    gcp:
      project: my-project-123
      zones: {eu-1: europe-west1-b, eu-2: europe-west1-c}
      source_ranges: [203.0.113.0/24]
      machine_type: e2-small
      image_family: ubuntu-2404-lts-amd64
      network: global/networks/proxies
      subnetwork: regions/europe-west1/subnetworks/proxies
      spot: false
      disk_size_gb: 20
      disk_type: pd-standard
      labels: {team: growth}
      network_tags: [egress]
      service_account: proxies@my-project-123.iam.gserviceaccount.com
      credentials_file: /secrets/gcp/key.json
      max_operations_in_flight: 8
"""


def _parse(text: str) -> None:
    parse_providers_config(text, "providers.yaml")


def test_every_key_of_the_issue_is_accepted() -> None:
    cfg = parse_providers_config(GCP, "providers.yaml")
    gcp = cfg.get("cloud", GcpProviderConfig).gcp
    assert gcp is not None
    assert gcp.zones == {"eu-1": "europe-west1-b", "eu-2": "europe-west1-c"}
    assert gcp.spot is False
    assert gcp.max_operations_in_flight == 8


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("eu-2: europe-west1-c", "eu-3: europe-west1-c", "key providers[0].gcp.zones: no GCE zone"),
        ("europe-west1-c}", "Europe}", "providers[0].gcp.zones"),
        ("[203.0.113.0/24]", "[]", "providers[0].gcp.source_ranges: expected at least one"),
        ("[203.0.113.0/24]", "[everyone]", "providers[0].gcp.source_ranges: 'everyone'"),
        ("{team: growth}", "{proxyfleet-proxy: x}", "gcp.labels.proxyfleet-proxy: the prefix"),
        ("{team: growth}", "{Team: x}", "gcp.labels.Team: expected GCE label syntax"),
        ("[egress]", "[Egress_1]", "gcp.network_tags[0]"),
        ("max_operations_in_flight: 8", "max_operations_in_flight: 0", "max_operations_in_flight"),
        ("spot: false", "spot: false\n      colour: red", "colour"),
        ("project: my-project-123", "project: My_Project", "gcp.project: expected a GCP project"),
        ("credentials_file: /secrets/gcp/key.json", "anonymous: true", "gcp.anonymous: only with"),
        (
            "eu-2: europe-west1-c",
            "eu-2: europe-west1-b",
            "gcp.zones: eu-1 and eu-2 name the same GCE zone europe-west1-b",
        ),
    ],
)
def test_mistakes_name_file_key_and_expectation(old: str, new: str, message: str) -> None:
    assert old in GCP
    with pytest.raises(ConfigError) as err:
        _parse(GCP.replace(old, new))
    assert str(err.value).startswith("providers.yaml: ")
    assert message in str(err.value)


def test_the_section_is_required_for_the_type() -> None:
    with pytest.raises(ConfigError, match=r"providers\[0\].gcp: required for type 'gcp'"):
        _parse(GCP.split("    gcp:", maxsplit=1)[0])


def test_the_placement_takes_only_pin_zone() -> None:
    v, cloud = GcpPlacementValidator(), parse_providers_config(GCP, "providers.yaml").get("cloud")
    v.validate(cloud, {"pin_zone": "true"})
    assert is_pinned({"pin_zone": "true"})
    assert not is_pinned({})
    with pytest.raises(InvalidInput, match="only pin_zone"):
        v.validate(cloud, {"image": "x"})
    with pytest.raises(InvalidInput, match="'true' or 'false'"):
        v.validate(cloud, {"pin_zone": "yes"})
