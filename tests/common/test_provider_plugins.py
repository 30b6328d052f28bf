"""Provider types as plugins: every type a workspace package declares is found through its
entry point, and a type registered at runtime (a fake `aws`) parses, is checked, and has its
placement validated on the API's path, with no edit to libs/common or the API."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator, Mapping
from importlib.metadata import entry_points
from pathlib import Path

import msgspec
import pytest

from proxyfleet.api.providers.service import ProviderCatalog
from proxyfleet.common.core.errors import ConfigError, InvalidInput
from proxyfleet.common.domain.pool_spec import PoolSpec
from proxyfleet.common.providers import (
    ENTRY_POINT_GROUP,
    INVALID_PLACEMENT,
    ProviderConfig,
    ProviderType,
    load_provider,
    parse_providers_config,
    provider_types,
    register,
    unregister,
)
from proxyfleet.common.providers.pool_checks import check_pool


class AwsSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    region: str
    instance_type: str = "t4g.nano"


class AwsProviderConfig(ProviderConfig, tag="aws"):
    aws: AwsSettings


class AwsPlacement:
    def validate(self, provider: ProviderConfig, placement: Mapping[str, str]) -> None:
        if set(placement) - {"instance_type"}:
            raise InvalidInput(
                "placement: an aws provider takes only instance_type", code=INVALID_PLACEMENT
            )


def check_aws(entry: AwsProviderConfig, where: str) -> None:
    if not entry.aws.region.startswith(("eu-", "us-")):
        raise ConfigError(f"{where}.aws.region: expected an AWS region, got {entry.aws.region!r}")


AWS = ProviderType(name="aws", config=AwsProviderConfig, placement=AwsPlacement(), check=check_aws)

CONFIG = """
providers:
  - name: cloud
    type: aws
    zones: [eu-1]
    max_proxies: 5
    aws: {region: eu-west-1}
"""


@pytest.fixture
def aws() -> Iterator[ProviderType[AwsProviderConfig]]:
    register(AWS)
    yield AWS
    unregister("aws")


def _declared_in_the_workspace() -> set[str]:
    """The types the packages under services/ declare in their pyproject.toml."""
    root = Path(__file__).resolve().parents[2]
    names: set[str] = set()
    for project in sorted(root.glob("services/*/pyproject.toml")):
        points = tomllib.loads(project.read_text()).get("project", {}).get("entry-points", {})
        names |= set(points.get(ENTRY_POINT_GROUP, {}))
    return names


def test_the_workspace_types_are_found_through_their_entry_points() -> None:
    named = {point.name for point in entry_points(group=ENTRY_POINT_GROUP)}
    assert {"local", "kvm", "gcp", "kubernetes", "static"} <= named
    assert named == _declared_in_the_workspace()
    assert set(provider_types()) == named
    assert all(kind.name == name for name, kind in provider_types().items())


def test_a_type_not_installed_is_refused_as_today() -> None:
    with pytest.raises(ConfigError) as err:
        parse_providers_config(CONFIG, "providers.yaml")
    assert str(err.value) == (
        "providers.yaml: key providers[0].type:"
        " provider type 'aws' is not available in this release"
    )


@pytest.mark.usefixtures("aws")
def test_a_registered_type_parses_as_its_own_struct(tmp_path: Path) -> None:
    config = parse_providers_config(CONFIG, "providers.yaml")
    cloud = config.get("cloud", AwsProviderConfig)
    assert (cloud.type, cloud.aws.region, cloud.aws.instance_type) == (
        "aws",
        "eu-west-1",
        "t4g.nano",
    )
    assert (cloud.zones, cloud.max_proxies, cloud.egress.exclusive) == (["eu-1"], 5, "ip")
    path = tmp_path / "providers.yaml"
    path.write_text(CONFIG)
    assert load_provider(str(path), "cloud", AwsProviderConfig).aws.region == "eu-west-1"


@pytest.mark.usefixtures("aws")
@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("    aws: {region: eu-west-1}\n", "", "key providers[0].aws: required for type 'aws'"),
        ("region: eu-west-1", "region: mars-1", "providers[0].aws.region: expected an AWS region"),
        (
            "region: eu-west-1",
            "regio: eu-west-1",
            "providers[0].aws: Object contains unknown field `regio`",
        ),
        ("max_proxies: 5", "gcp: {}", "key providers[0]: Object contains unknown field `gcp`"),
    ],
)
def test_a_registered_type_is_checked_naming_the_key(old: str, new: str, message: str) -> None:
    assert old in CONFIG
    with pytest.raises(ConfigError) as err:
        parse_providers_config(CONFIG.replace(old, new), "providers.yaml")
    assert message in str(err.value)


@pytest.mark.usefixtures("aws")
def test_its_placement_is_validated_on_the_apis_path() -> None:
    config = parse_providers_config(CONFIG, "providers.yaml")
    catalog = ProviderCatalog(config)
    catalog.check_placement(catalog.get("cloud"), {"instance_type": "t4g.small"})
    with pytest.raises(InvalidInput) as err:
        catalog.check_placement(catalog.get("cloud"), {"image": "x"})
    assert err.value.code == INVALID_PLACEMENT
    check_pool("web", PoolSpec(provider="cloud", size=2, placement={"instance_type": "x"}), config)
    with pytest.raises(InvalidInput, match="only instance_type"):
        check_pool("web", PoolSpec(provider="cloud", size=2, placement={"disk": "x"}), config)


def test_a_type_is_refused_when_its_struct_does_not_match_its_name() -> None:
    class Untagged(ProviderConfig, tag="ec2"):
        aws: AwsSettings

    class NoSection(ProviderConfig, tag="aws"):
        region: str

    with pytest.raises(ValueError, match="tagged 'ec2'"):
        ProviderType(name="aws", config=Untagged)
    with pytest.raises(ValueError, match="no section field 'aws'"):
        ProviderType(name="aws", config=NoSection)
