"""Pool specs: their defaults, the checks on a spec alone and against the providers config,
and the providers config's `pools:` section (errors naming file, key and expectation)."""

from __future__ import annotations

import re

import msgspec
import pytest

from proxyfleet.common.core.errors import ConfigError, InvalidInput
from proxyfleet.common.domain.pool_spec import Autoscale, PoolProvider, PoolSpec, spec_problem
from proxyfleet.common.providers import parse_providers_config
from proxyfleet.common.providers.pool_checks import check_config_pools, check_pool, pool_problem

CONFIG = """
providers:
  - name: local
    type: local
    zones: [local-a, local-b]
    max_proxies: 20
    local: {}
  - name: spare
    type: local
    zones: [local-c]
    local: {}
"""


def spec(**kw: object) -> PoolSpec:
    return msgspec.convert({"provider": "local", "size": 3, **kw}, PoolSpec)


def test_defaults_and_the_shorthand() -> None:
    s = spec()
    assert [p.name for p in s.weighted()] == ["local"]
    assert (s.max_surge, s.max_unavailable, s.max_age, s.start_size()) == (1, 0, None, 3)
    scaled = spec(size=None, autoscale={"min": 2, "max": 8})
    assert (scaled.start_size(), scaled.most_members()) == (2, 8)
    assert (scaled.autoscale or pytest.fail("no autoscale")).high_water == 2  # 1 + step 1


@pytest.mark.parametrize(
    ("kw", "field", "words"),
    [
        ({"providers": [{"name": "spare"}]}, "provider", "not both"),
        ({"provider": None}, "provider", "either provider or providers"),
        ({"size": None}, "size", "required"),
        ({"zones": ["local-a", "local-a"]}, "zones", "listed twice"),
        ({"labels": {"proxyfleet-pool": "x"}}, "labels.proxyfleet-pool", "reserved"),
        ({"autoscale": {"min": 5, "max": 2}}, "autoscale.min", "at most max"),
        ({"size": 9, "autoscale": {"min": 1, "max": 4}}, "size", "within autoscale [1, 4]"),
        (
            {"autoscale": {"min": 1, "max": 4, "target_free": 3, "max_free": 2}},
            "autoscale.max_free",
            "at least target_free",
        ),
        ({"max_age": 3600, "max_surge": 0}, "max_surge", "create a replacement first"),
    ],
)
def test_a_spec_alone_names_its_problem(kw: dict[str, object], field: str, words: str) -> None:
    problem = spec_problem(spec(**kw))
    assert problem is not None
    assert problem.field == field
    assert words in problem.message


def test_two_providers_with_weights() -> None:
    s = PoolSpec(providers=[PoolProvider(name="local", weight=3), PoolProvider(name="spare")])
    assert spec_problem(msgspec.structs.replace(s, size=2)) is None
    dup = PoolSpec(size=1, providers=[PoolProvider(name="local")] * 2)
    assert (spec_problem(dup) or pytest.fail("accepted")).field == "providers"
    fallback_only = PoolSpec(size=1, providers=[PoolProvider(name="local", weight=0)])
    assert "weight > 0" in str(spec_problem(fallback_only))


@pytest.mark.parametrize(
    ("kw", "field", "words"),
    [
        ({"provider": "cloud"}, "provider", "unknown provider 'cloud' (known: local, spare)"),
        ({"zones": ["local-c"]}, "zones[0]", "served by none of the pool's providers"),
        ({"size": 21}, "size", "21 members need more than the providers' max_proxies (20)"),
        ({"size": None, "autoscale": {"min": 1, "max": 30}}, "autoscale.max", "(20)"),
        ({"placement": {"image": "x"}}, "placement", "unknown key(s) image"),
    ],
)
def test_checked_against_the_providers(kw: dict[str, object], field: str, words: str) -> None:
    config = parse_providers_config(CONFIG, "p.yaml")
    problem = pool_problem(spec(**kw), config)
    assert problem is not None
    assert (problem.field, words in problem.message) == (field, True), problem.message
    with pytest.raises(InvalidInput, match=re.escape(f"pool eu: {field}")) as err:
        check_pool("eu", spec(**kw), config)
    assert err.value.code == "invalid_pool"


def test_a_provider_without_a_limit_takes_any_size() -> None:
    config = parse_providers_config(CONFIG, "p.yaml")
    both = PoolSpec(size=500, providers=[PoolProvider(name="local"), PoolProvider(name="spare")])
    assert pool_problem(both, config) is None
    assert pool_problem(spec(zones=["local-b"]), config) is None


POOLS = """
pools:
  eu:
    provider: local
    size: 3
    max_age: 21600
    labels: {team: qa}
"""


def test_the_config_files_pools_section() -> None:
    config = parse_providers_config(CONFIG + POOLS, "p.yaml")
    check_config_pools(config, "p.yaml")
    eu = config.pools["eu"]
    assert (eu.size, eu.max_age, eu.labels) == (3, 21600, {"team": "qa"})
    assert parse_providers_config(CONFIG, "p.yaml").pools == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (POOLS.replace("size: 3", "size: 30"), "key pools.eu.size: 30 members need more"),
        (POOLS.replace("size: 3", "sise: 3"), "key pools.eu: Object contains unknown field"),
        (POOLS.replace("size: 3", "size: -1"), "key pools.eu.size"),
        (POOLS.replace("max_age: 21600", "max_age: 0"), "key pools.eu.max_age"),
        (POOLS.replace("provider: local", "provider: cloud"), "pools.eu.provider: unknown"),
        (POOLS.replace("  eu:", "  EU:"), "key pools.EU: Expected `str` matching regex"),
        (POOLS + "  eu:\n    provider: local\n    size: 1\n", "pools.eu: given twice"),
        ("pools: [eu]", "key pools: expected a mapping"),
    ],
)
def test_a_bad_pool_in_the_file_names_file_and_key(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        check_config_pools(parse_providers_config(CONFIG + text, "conf/p.yaml"), "conf/p.yaml")
    assert str(err.value).startswith("conf/p.yaml: ")
    assert expected in str(err.value)


def test_autoscale_bounds_are_checked_by_the_model() -> None:
    with pytest.raises(msgspec.ValidationError, match=r"autoscale\.min"):
        msgspec.convert({"provider": "local", "autoscale": {"min": -1, "max": 2}}, PoolSpec)
    assert Autoscale(min=0, max=1).high_water == 2
