"""A vendor's gateway as sticky sessions (pure.vendor, pure.desired): the template, one
session per proxy, stable across restarts, new for a new proxy."""

from __future__ import annotations

import re

import pytest

from proxyfleet.common.providers import parse_providers_config
from proxyfleet.common.wire.models import Scheme
from proxyfleet.provisioner_static.pure.config import StaticProviderConfig
from proxyfleet.provisioner_static.pure.desired import vendor_load
from proxyfleet.provisioner_static.pure.vendor import (
    check_template,
    expand,
    session_id,
    template_keys,
)

TEMPLATE = "customer-acme-zone-res-country-{country}-city-{city}-session-{session}"


def test_the_template_takes_the_session_and_its_params() -> None:
    assert template_keys(TEMPLATE) == ["country", "city", "session"]
    params = {"country": "de", "city": "berlin"}
    check_template(TEMPLATE, params)
    assert expand(TEMPLATE, "ab12", params) == (
        "customer-acme-zone-res-country-de-city-berlin-session-ab12"
    )


@pytest.mark.parametrize(
    ("template", "params", "message"),
    [
        ("customer-acme", {}, "expected a {session} slot"),
        ("customer-{user}-session-{session}", {}, "slot {user} is not in params"),
        ("customer-{0}-session-{session}", {}, "plain name"),
        ("customer-{x:>4}-session-{session}", {"x": "1"}, "plain name"),
        ("customer-{-session-{session}", {}, "malformed template"),
    ],
)
def test_a_bad_template_is_refused(template: str, params: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        check_template(template, params)


def test_a_session_id_is_stable_per_seed_and_differs_between_seeds() -> None:
    one = session_id("vend", "p-1", 12)
    assert one == session_id("vend", "p-1", 12)
    assert re.fullmatch(r"[0-9a-f]{12}", one)
    assert len({session_id("vend", f"p-{i}", 12) for i in range(1000)}) == 1000
    assert session_id("other", "p-1", 12) != one


def test_the_vendor_list_is_n_proxies_with_one_session_each_and_stable_ids() -> None:
    text = """
providers:
  - name: vend
    type: static
    zones: [eu]
    static:
      vendor:
        endpoint: socks5h://127.0.0.1:7000
        username: customer-acme-session-{session}
        password: pw
        sessions: 4
        labels: {vendor: acme}
"""
    entry = parse_providers_config(text, "p.yaml").get("vend", StaticProviderConfig)
    load = vendor_load(entry)
    assert load.entries is not None
    assert len(load.entries) == 4
    users = {d.line.username for d in load.entries}
    assert len(users) == 4
    assert all(u.startswith("customer-acme-session-") for u in users)
    assert {(d.line.scheme, d.line.host, d.line.port, d.line.password) for d in load.entries} == {
        (Scheme.SOCKS5H, "127.0.0.1", 7000, "pw")
    }
    assert [d.id for d in vendor_load(entry).entries or []] == [d.id for d in load.entries]
    assert {d.zone for d in load.entries} == {"eu"}
    assert load.entries[0].labels == {"vendor": "acme"}
