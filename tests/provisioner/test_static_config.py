"""The static provider's config (pure.config): parsed from the providers file like every
type, checked at start naming file, key and item; and `parse_entry`, the API's check of a
line an admin adds."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxyfleet.common.core.errors import ConfigError, InvalidInput
from proxyfleet.common.providers import parse_providers_config, provider_types
from proxyfleet.common.wire.models import Scheme
from proxyfleet.provisioner_static.pure.config import StaticProviderConfig, parse_entry
from proxyfleet.provisioner_static.secret_files import with_secrets

SECRET = "vendor-Pa55"
CONFIG = f"""
providers:
  - name: mine
    type: static
    zones: [eu, us]
    max_proxies: 100
    static:
      proxies:
        - url: http://u:p@127.0.0.1:3128
        - {{url: "socks5h://127.0.0.2:1080", zone: us, labels: {{tier: a}}, name: two}}
      sources:
        - {{file: /etc/proxies.txt, refresh: 60, scheme: socks5}}
        - {{url: "https://lists.example/p.txt", name: bought, zone: us}}
      vendor:
        endpoint: http://gw.vendor.example:7777
        username: customer-acme-country-{{country}}-session-{{session}}
        password: {SECRET}
        sessions: 5
        params: {{country: de}}
      empty_guard: 30
"""


def parse(text: str = CONFIG) -> StaticProviderConfig:
    return parse_providers_config(text, "providers.yaml").get("mine", StaticProviderConfig)


def test_a_static_entry_parses_with_every_source() -> None:
    s = parse().static
    assert [p.url for p in s.proxies][1] == "socks5h://127.0.0.2:1080"
    assert (s.proxies[1].zone, s.proxies[1].labels, s.proxies[0].zone) == (
        "us",
        {"tier": "a"},
        None,
    )
    assert (s.sources[0].file, s.sources[0].refresh, s.sources[0].scheme) == (
        "/etc/proxies.txt",
        60.0,
        Scheme.SOCKS5,
    )
    assert (s.sources[1].refresh, s.sources[1].name) == (300.0, "bought")
    assert s.vendor is not None
    assert (s.vendor.sessions, s.vendor.params) == (5, {"country": "de"})
    assert s.empty_guard == 30


def test_the_defaults_allow_a_provider_fed_by_the_api_alone() -> None:
    text = "providers:\n  - {name: mine, type: static, zones: [z]}\n"
    s = parse(text).static
    assert (s.proxies, s.sources, s.vendor, s.empty_guard) == ([], [], None, 50.0)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "url: http://u:p@127.0.0.1:3128",
            "url: ftp://u:p@127.0.0.1:3128",
            "providers[0].static.proxies[0].url: unknown scheme 'ftp'",
        ),
        (
            "url: http://u:p@127.0.0.1:3128",
            "url: http://u:p@127.0.0.1:65536",
            "providers[0].static.proxies[0].url: port out of range",
        ),
        (
            '"socks5h://127.0.0.2:1080"',
            '"http://u:other@127.0.0.1:3128"',
            "providers[0].static.proxies[1].url: duplicate of proxies[0]",
        ),
        ("zone: us, labels", "zone: asia, labels", "static.proxies[1].zone: 'asia' is not one"),
        (
            "{file: /etc/proxies.txt,",
            "{file: /etc/proxies.txt, url: 'http://x/y',",
            "providers[0].static.sources[0]: expected exactly one of file or url",
        ),
        ('"https://lists.example/p.txt"', '"ftp://lists.example/p.txt"', "sources[1].url:"),
        (
            "{file: /etc/proxies.txt,",
            "{file: /etc/proxies.txt, name: bought,",
            "static.sources[1].name: 'bought' names another source too",
        ),
        ("refresh: 60", "refresh: 0", "providers[0].static.sources[0].refresh"),
        (
            "endpoint: http://gw.vendor.example:7777",
            "endpoint: gw.vendor.example:7777",
            "static.vendor.endpoint: expected scheme://host:port",
        ),
        (
            "endpoint: http://gw.vendor.example:7777",
            "endpoint: http://a:b@gw.vendor.example:7777",
            "static.vendor.endpoint: expected no credentials",
        ),
        ("-session-{session}", "", "static.vendor.username: expected a {session} slot"),
        ("{country}", "{city}", "static.vendor.username: slot {city} is not in params"),
        (
            f"password: {SECRET}",
            f"password: {SECRET}\n        password_file: /run/secrets/vendor",
            "static.vendor: expected exactly one of password or password_file",
        ),
        (f"password: {SECRET}", "", "static.vendor: expected exactly one of password or"),
        ("empty_guard: 30", "empty_guard: 130", "providers[0].static.empty_guard"),
        ("empty_guard: 30", "guard: 30", "unknown field `guard`"),
    ],
)
def test_a_bad_entry_is_refused_naming_file_key_and_item(old: str, new: str, message: str) -> None:
    assert old in CONFIG
    with pytest.raises(ConfigError) as err:
        parse(CONFIG.replace(old, new))
    assert str(err.value).startswith("providers.yaml: key providers[0]")
    assert message in str(err.value)
    assert SECRET not in str(err.value)


def test_parse_entry_is_registered_and_gives_a_stable_id_and_a_masked_url() -> None:
    entry = parse()
    kind = provider_types()["static"]
    assert kind.parse_entry is parse_entry
    got = parse_entry(entry, "socks5://u:hunter2@127.1.1.1:1080")
    again = parse_entry(entry, "socks5://u:changed@127.1.1.1:1080")
    assert got.id == again.id
    assert got.masked == "socks5://u:***@127.1.1.1:1080"
    assert parse_entry(entry, "127.1.1.1:1080:u:x").id != got.id  # http, not socks5


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("ftp://u:hunter2@h:1", "unknown scheme"),
        ("h:1:hunter2", "malformed"),
        ("u:hunter2@h:0", "port out of range"),
        ("", "empty line"),
    ],
)
def test_parse_entry_refuses_a_bad_line_without_its_password(line: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message) as err:
        parse_entry(parse(), line)
    assert "hunter2" not in str(err.value)
    assert err.value.code == "invalid_entry"


def test_a_bad_inline_proxy_is_refused_with_its_line_in_the_file() -> None:
    text = CONFIG.replace('"socks5h://127.0.0.2:1080"', '"socks5h://127.0.0.2:0"')
    line = 1 + text.splitlines().index(next(x for x in text.splitlines() if ":0" in x))
    with pytest.raises(ConfigError) as err:
        parse(text)
    assert str(err.value) == (
        "providers.yaml: key providers[0].static.proxies[1].url: port out of range:"
        f" expected 1-65535 (line {line})"
    )


def test_a_vendor_password_file_is_read_by_the_provisioner_only(tmp_path: Path) -> None:
    """Every service parses the providers file; only the static provisioner reads the
    file (a mounted Secret) into the password."""
    secret = tmp_path / "vendor-password"
    config = CONFIG.replace(f"password: {SECRET}", f"password_file: {secret}")
    entry = parse(config)  # parsing and checks do not need the file
    assert entry.static.vendor is not None
    assert entry.static.vendor.password == ""
    with pytest.raises(ConfigError, match="vendor-password: No such file") as err:
        with_secrets(entry)
    secret.write_text("")
    with pytest.raises(ConfigError, match="the file is empty"):
        with_secrets(entry)
    secret.write_text(SECRET + "\n")
    vendor = with_secrets(entry).static.vendor
    assert vendor is not None
    assert (vendor.password, vendor.password_file) == (SECRET, "")
    assert SECRET not in str(err.value)
    assert with_secrets(parse()) == parse()  # an inline password is kept as it is
