"""Redis Cluster on paper (docs/scaling.md, Past one Redis): the keys each store script
builds, read from its Lua source, and the slots they would hash to today and under the
proposed hash tags. What the doc says stays global is what this finds outside a shard."""

from __future__ import annotations

import re
from importlib import resources

import pytest
from tests.scaling.cluster_layout import (
    ADDRESS,
    CLIENT,
    FLEET,
    LEASE_ELSEWHERE,
    Fleet,
    Sample,
    grant_shards,
    kind_of,
    off_shard,
    pool_shard,
    proposed_key,
    slots_proposed,
    slots_today,
    zone_shard,
)
from tests.scaling.lua_keys import (
    KeyTemplate,
    Script,
    hash_tag,
    key_calls,
    key_slot,
    load_scripts,
    strip_comments,
)

POOL = Sample(pool_shard("scrapers"), lock="pool:scrapers")
"""A call in a pool's shard, fenced by that pool's lock (the pool controller's writes)."""
ZONE = Sample(zone_shard("gcp", "europe-west1-b"), elsewhere=pool_shard("scrapers"))
"""A call in the shard of a provider/zone's pool-less proxies (an unfenced write)."""
LEASE_SCRIPTS = ("grant", "renew", "report", "release", "expire")


@pytest.fixture(scope="module")
def scripts() -> dict[str, Script]:
    return load_scripts()


def test_slots_are_redis_clusters() -> None:
    # Values from the Redis Cluster specification (and CRC16/XMODEM's check value).
    assert key_slot("123456789") == 0x31C3
    assert key_slot("foo") == 12182
    assert key_slot("{user1000}.following") == key_slot("{user1000}.followers")
    assert hash_tag("foo{}{bar}") == "foo{}{bar}"  # an empty tag: the whole key
    assert hash_tag("foo{{bar}}zap") == "{bar"
    assert hash_tag("foo{bar}{zap}") == "bar"


def test_the_parser_reads_every_k_call_of_every_script(scripts: dict[str, Script]) -> None:
    folder = resources.files("proxyfleet.common.store") / "lua"
    for name in scripts:
        code = strip_comments((folder / f"{name}.lua").read_text())
        assert len(key_calls(code)) == len(re.findall(r"(?<![\w.:])k\(", code)), name
    assert scripts["grant"].families == {
        "avail", "avail_pool", "ban", "client_egress", "egress_cool", "egress_held",
        "grant_idem", "lease", "leases", "outbox", "pool", "pool_refused", "proxy",
    }  # fmt: skip
    # Through _lib.lua: release -> end_lease -> avail_add -> avail_keys.
    assert {"end_lease", "avail_add", "avail_keys", "event"} <= scripts["release"].helpers
    assert KeyTemplate(("avail_pool", "<pool>"), "avail_keys") in scripts["release"].keys
    assert KeyTemplate(("egress_held", "ip", "<ip>"), "end_lease") in scripts["release"].keys


def test_every_key_a_script_builds_has_a_place_in_the_layout(
    scripts: dict[str, Script],
) -> None:
    unplaced = []
    for script in scripts.values():
        for template in script.keys:
            try:
                kind_of(template, POOL)
            except KeyError:
                unplaced.append(f"{script.name}: {template.render({})}")
    assert not unplaced, f"keys the layout does not place (add them to it): {unplaced}"
    with pytest.raises(KeyError):
        kind_of(KeyTemplate(("a_new_key", "<id>"), "script"), POOL)


def test_today_no_lease_script_stays_in_one_slot(scripts: dict[str, Script]) -> None:
    # A script with keys in several slots fails on Redis Cluster (CROSSSLOT, or a key
    # another node serves): none of the lease scripts runs there as it is.
    touched = {name: len(slots_today(scripts[name])) for name in LEASE_SCRIPTS}
    assert all(n > 1 for n in touched.values()), touched
    assert touched["grant"] >= 20  # every family and helper key in a slot of its own


OFF_SHARD = {
    # script: what its keys outside the shard's slot are about -> their families
    "grant": {
        ADDRESS: {"egress_held", "egress_cool"},
        CLIENT: {"client_egress", "grant_idem"},
        LEASE_ELSEWHERE: {"lease"},
    },
    "release": {ADDRESS: {"egress_held", "egress_cool"}, CLIENT: {"client_egress"}},
    "expire": {ADDRESS: {"egress_held", "egress_cool"}, CLIENT: {"client_egress"}},
    "renew": {},
    "report": {},
    "egress": {
        ADDRESS: {"egress", "egress_held", "egress_cool"},
        CLIENT: {"client_egress"},
        FLEET: {"egress_counts", "egress_summary"},
    },
    "transition": {
        ADDRESS: {"egress", "egress_held", "egress_cool"},
        CLIENT: {"client_egress"},
        FLEET: {"egress_counts", "egress_summary"},
    },
    "create": {CLIENT: {"idem"}},
    "pool_apply": {FLEET: {"pools"}},
    "pool_delete": {FLEET: {"pools"}},
    "pool_remove": {FLEET: {"pools"}},
    "mark_installation": {FLEET: {"installation"}},
    "mark_listed": {FLEET: {"installation"}},
}
"""What the doc's table says; every script not named keeps all its keys in its shard."""


@pytest.mark.parametrize("sample", [POOL, ZONE], ids=["pool", "provider-zone"])
def test_under_the_proposed_tags_only_the_global_keys_leave_the_shard(
    scripts: dict[str, Script], sample: Sample
) -> None:
    for name, script in scripts.items():
        if name.startswith("lock_"):
            continue  # no shard: a lock's own slot (below)
        want = OFF_SHARD.get(name, {})
        got = {kind: set(families) for kind, families in off_shard(script, sample).items()}
        assert got == want, name
        # Each kind is one slot: the shard's keys in one, each global kind's in one.
        assert all(len(s) == 1 for s in slots_proposed(script, sample).values()), name


def test_a_pool_lock_is_in_its_pools_shard_and_another_lock_in_the_fleets_slot(
    scripts: dict[str, Script],
) -> None:
    pool_lock = slots_proposed(scripts["lock_acquire"], POOL)
    assert pool_lock == {"shard": {key_slot("{pool.scrapers}")}}
    gc_lock = Sample(POOL.shard, lock="gc:local")
    assert set(slots_proposed(scripts["lock_acquire"], gc_lock)) == {FLEET}
    # A pool's fenced write fenced by another pool's lock would read another slot.
    other = Sample(POOL.shard, lock="pool:other")
    assert off_shard(scripts["pool_scale"], other) == {FLEET: frozenset({"lock"})}


def test_concrete_keys_of_a_grant_in_a_pool(scripts: dict[str, Script]) -> None:
    keys = {t.render({}): proposed_key(t, POOL) for t in scripts["grant"].keys}
    assert keys["proxy:id"] == "pf:{pool.scrapers}:proxy:id"
    assert keys["avail_pool:pool"] == "pf:{pool.scrapers}:avail_pool:pool"
    assert keys["client_egress:client"] == "pf:{client.team-a}:client_egress:client"
    assert keys["egress_held:ip:ip"] == "pf:{net.203.0.113.0/24}:egress_held:ip:ip"
    assert keys["grant_idem:idem"] == "pf:{client.team-a}:grant_idem:idem"
    home = key_slot("{pool.scrapers}")
    assert key_slot(keys["proxy:id"]) == key_slot(keys["outbox"]) == home == 8416
    assert {key_slot(keys[k]) for k in ("client_egress:client", "egress_held:ip:ip")} == {
        key_slot("{client.team-a}"),
        key_slot("{net.203.0.113.0/24}"),
    }
    # A caller's idempotency key and its holds: one slot, one step.
    assert key_slot(keys["grant_idem:idem"]) == key_slot(keys["client_egress:client"]) != home


FLEET_OF_FOUR = Fleet(
    pools={
        "scrapers": frozenset({("gcp", "europe-west1-b"), ("gcp", "us-east1-b")}),
        "qa": frozenset({("kvm", "lab")}),
    },
    plain=frozenset({("gcp", "europe-west1-b"), ("local", "local-a")}),
)


def test_a_grant_with_a_pool_goes_to_one_shard_and_one_without_fans_out() -> None:
    assert grant_shards(FLEET_OF_FOUR, pool="scrapers") == ["pool.scrapers"]
    assert grant_shards(FLEET_OF_FOUR, pool="nope") == []
    assert grant_shards(FLEET_OF_FOUR, provider="gcp", zone="europe-west1-b") == [
        "pool.scrapers",
        "pz.gcp.europe-west1-b",
    ]
    assert grant_shards(FLEET_OF_FOUR, provider="kvm") == ["pool.qa"]
    assert grant_shards(FLEET_OF_FOUR, provider="local", zone="local-a") == ["pz.local.local-a"]
    assert grant_shards(FLEET_OF_FOUR) == FLEET_OF_FOUR.shards()
    assert len(FLEET_OF_FOUR.shards()) == 4
