"""What each source of a static provider lists (pure.desired): zones and labels from the
entry, the source or the provider; the API's entries checked again when read."""

from __future__ import annotations

from proxyfleet.common.providers import parse_providers_config
from proxyfleet.common.wire.models import Scheme
from proxyfleet.provisioner_static.pure.config import StaticProviderConfig
from proxyfleet.provisioner_static.pure.desired import (
    AddedLine,
    api_load,
    file_load,
    inline_load,
)
from proxyfleet.provisioner_static.pure.lines import entry_id, parse_line, parse_lines

TEXT = """
providers:
  - name: mine
    type: static
    zones: [eu, us]
    static:
      proxies:
        - {url: "http://a:1", zone: us, labels: {k: v}, name: first}
        - {url: "http://b:2"}
      sources:
        - {file: /x, zone: us, labels: {origin: list}, scheme: socks5h}
        - {file: /y}
"""
ENTRY = parse_providers_config(TEXT, "p.yaml").get("mine", StaticProviderConfig)


def test_inline_entries_take_their_zone_labels_and_name_else_the_providers_zone() -> None:
    load = inline_load(ENTRY)
    assert load.entries is not None
    assert not load.guarded
    a, b = load.entries
    assert (a.zone, dict(a.labels), a.name, a.source) == ("us", {"k": "v"}, "first", "inline")
    assert a.placement() == {"source": "inline", "host": "a", "port": "1", "name": "first"}
    assert (b.zone, b.placement()) == ("eu", {"source": "inline", "host": "b", "port": "2"})


def test_a_files_entries_take_its_zone_labels_and_scheme_and_are_guarded() -> None:
    parsed = parse_lines(["h:1", "http://h:2", "bad"], ENTRY.static.sources[0].scheme)
    load = file_load(ENTRY, 0, ENTRY.static.sources[0], parsed)
    assert load.guarded
    assert load.key == "sources[0]"
    assert load.entries is not None
    assert [(d.line.scheme, d.zone, dict(d.labels)) for d in load.entries] == [
        (Scheme.SOCKS5H, "us", {"origin": "list"}),
        (Scheme.HTTP, "us", {"origin": "list"}),
    ]
    other = file_load(ENTRY, 1, ENTRY.static.sources[1], parse_lines(["h:1"]))
    assert other.entries is not None
    assert (other.key, other.entries[0].zone) == ("sources[1]", "eu")


def test_the_apis_entries_are_read_again_and_a_bad_one_named_by_its_id() -> None:
    good = "socks5://u:pw@127.0.0.1:1080"
    line = parse_line(good)
    assert line is not None
    added = [
        AddedLine(entry_id("mine", line), good, zone="us", labels={"t": "1"}, name="n"),
        AddedLine("sbad1", "ftp://u:pw@h:1"),
        AddedLine("sbad2", "h:1", zone="asia"),
    ]
    load, bad = api_load(ENTRY, added)
    assert load.entries is not None
    [d] = load.entries
    assert (d.id, d.zone, dict(d.labels), d.name, d.source) == (
        added[0].id,
        "us",
        {"t": "1"},
        "n",
        "api",
    )
    assert [(entry_id, r.kind) for entry_id, r in bad] == [("sbad1", "scheme"), ("sbad2", "zone")]
    assert all("pw" not in r.reason for _, r in bad)
