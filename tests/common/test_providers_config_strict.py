"""What the providers config loader refuses beyond types: keys given twice, zones listed
twice, and local proxies listening somewhere else than where clients are sent."""

from __future__ import annotations

import pytest

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.domain import strict_yaml
from proxyfleet.common.providers import parse_providers_config
from proxyfleet.provisioner_local.pure.config import LocalProviderConfig

BASE = """
providers:
  - name: local
    type: local
    zones: [local-a, local-b]
    local:
      state_dir: /tmp/pf
"""


def _with_local(section: str) -> str:
    return BASE.replace("    local:\n      state_dir: /tmp/pf\n", f"    local: {section}\n")


def _refused(text: str) -> str:
    with pytest.raises(ConfigError) as err:
        parse_providers_config(text, "conf/providers.yaml")
    message = str(err.value)
    assert message.startswith("conf/providers.yaml: "), message
    return message


@pytest.mark.parametrize(
    ("text", "key", "lines"),
    [
        (BASE + "providers: []\n", "key providers:", "(lines 2 and 8)"),
        (
            BASE.replace("    type: local\n", "    type: local\n    type: kvm\n"),
            "providers[0].type",
            "4 and 5",
        ),
        (BASE + "      state_dir: /tmp/other\n", "providers[0].local.state_dir", "7 and 8"),
        (
            BASE.replace("zones: [local-a, local-b]", "zones: [local-a]\n    zones: [local-b]"),
            "providers[0].zones",
            "5 and 6",
        ),
    ],
)
def test_a_key_given_twice_is_refused_at_any_level(text: str, key: str, lines: str) -> None:
    message = _refused(text)
    assert key in message
    assert lines in message
    assert "expected each key once" in message


def test_a_merge_key_overridden_in_place_is_not_a_duplicate() -> None:
    text = """
defaults: &defaults {state_dir: /tmp/a, engine: squid}
providers:
  - name: local
    type: local
    zones: [z]
    local:
      <<: *defaults
      state_dir: /tmp/b
"""
    # `defaults` itself is not a known key: only the duplicate check is under test here
    data = strict_yaml.load(text)
    assert data["providers"][0]["local"] == {"state_dir": "/tmp/b", "engine": "squid"}


def test_strict_yaml_keeps_documents_as_pyyaml_reads_them() -> None:
    assert strict_yaml.load("") is None
    assert strict_yaml.load("a: [1, {b: x}]\n'a2': true\n") == {"a": [1, {"b": "x"}], "a2": True}
    with pytest.raises(strict_yaml.DuplicateKey):
        strict_yaml.load('a: 1\n"a": 2\n')


def test_a_zone_listed_twice_is_refused() -> None:
    message = _refused(BASE.replace("[local-a, local-b]", "[local-a, local-b, local-a]"))
    assert "key providers[0].zones: zone 'local-a' listed twice" in message
    assert message.endswith(f"(line {strict_yaml.line_of(BASE, 'providers[0].zones')})")


def test_line_of_finds_a_key_or_its_nearest_enclosing_one() -> None:
    text = "a:\n  - x: 1\n  - x: 2\n    y: [p, q]\nb: {}\n"
    assert strict_yaml.line_of(text, "a[1].y[1]") == 4
    assert strict_yaml.line_of(text, "a[1].x") == 3
    assert strict_yaml.line_of(text, "a[1].missing") == 3
    assert strict_yaml.line_of(text, "a[7]") == 2
    assert strict_yaml.line_of("a: [", "a") is None


@pytest.mark.parametrize(
    ("local", "key", "expected"),
    [
        ("{bind_host: localhost}", "local.bind_host", "expected an IPv4 address"),
        ("{bind_host: not-an-address!}", "local.bind_host", "got 'not-an-address!'"),
        ("{bind_host: '::1'}", "local.bind_host", "expected an IPv4 address"),
        ("{bind_host: 127.0.0.1.5}", "local.bind_host", "expected an IPv4 address"),
        ("{bind_host: 0.0.0.0}", "local.advertise_host", "required when bind_host is 0.0.0.0"),
        (
            "{bind_host: 0.0.0.0, advertise_host: 127.0.0.1}",
            "local.advertise_host",
            "expected a non-loopback address",
        ),
        (
            "{bind_host: 0.0.0.0, advertise_host: 0.0.0.0}",
            "local.advertise_host",
            "expected a non-loopback address",
        ),
        (
            "{bind_host: 127.0.0.1, advertise_host: 192.0.2.7}",
            "local.advertise_host",
            "expected bind_host's address 127.0.0.1",
        ),
        ("{advertise_host: proxy.example}", "local.advertise_host", "expected an IPv4 address"),
    ],
)
def test_local_proxies_listen_where_clients_are_sent(local: str, key: str, expected: str) -> None:
    message = _refused(_with_local(local))
    assert f"key providers[0].{key}: " in message
    assert expected in message


@pytest.mark.parametrize(
    ("local", "advertised"),
    [
        ("{}", "127.0.0.1"),
        ("{bind_host: 127.0.0.2}", "127.0.0.2"),
        ("{bind_host: 192.0.2.7, advertise_host: 192.0.2.7}", "192.0.2.7"),
        ("{bind_host: 0.0.0.0, advertise_host: 192.0.2.7}", "192.0.2.7"),
    ],
)
def test_accepted_binds_advertise_an_address_the_proxies_listen_on(
    local: str, advertised: str
) -> None:
    settings = (
        parse_providers_config(_with_local(local), "p.yaml").get("local", LocalProviderConfig).local
    )
    assert settings is not None
    assert (settings.advertise_host or settings.bind_host) == advertised
