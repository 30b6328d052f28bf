"""A paper Redis Cluster for the store's scripts (docs/scaling.md, Past one Redis).

The proposed layout: a script runs in one *shard*, whose hash tag goes into the namespace it
is given (`pf:{pool.scrapers}`, so every key `k()` builds is in the shard's slot), except
the key families that cannot belong to one shard, each tagged by what it is about (an
address's network, a caller, ...). And which shards a grant goes to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tests.scaling.lua_keys import NAMESPACE, KeyTemplate, Script, key_slot

SHARD = "shard"
"""In the script's shard: the hash tag is in the namespace the script is given."""
ADDRESS = "address"
"""Exit-address exclusivity and the address index, tagged by the address's network (an
address's and its network's holds and cooldowns in one slot)."""
CLIENT = "client"
"""A caller's keys, tagged by its name: its holds across every shard (`distinct` grants)
and its idempotency keys (the API scopes each by the caller: `<caller>:<key>`)."""
LEASE_ELSEWHERE = "lease elsewhere"
"""Another shard's lease (one holding an address this shard's proxy leaves through)."""
FLEET = "fleet"
"""The few fleet-wide keys (the pools' index, the installation marker, health's address
counts, locks that are no pool's), in one slot of their own."""

SHARD_FAMILIES = frozenset(
    {
        "avail", "avail_pool", "ban", "blocked", "counts", "lease", "leases", "outbox",
        "pool", "pool_members", "pool_refused", "pool_status", "probe", "probers",
        "provider", "provider_index", "proxies", "proxy", "tombstones",
    }
)  # fmt: skip
OWN_TAG: Mapping[str, str] = {
    "egress": ADDRESS,
    "egress_held": ADDRESS,
    "egress_cool": ADDRESS,
    "client_egress": CLIENT,
    "grant_idem": CLIENT,
    "idem": CLIENT,
    "pools": FLEET,
    "installation": FLEET,
    "egress_counts": FLEET,
    "egress_summary": FLEET,
}
ELSEWHERE: Mapping[tuple[str, str], str] = {("lease", "egress_holds_end"): LEASE_ELSEWHERE}
"""(family, helper) built in a helper that reads another shard's key of a shard family."""


def pool_shard(pool: str) -> str:
    return f"pool.{pool}"


def zone_shard(provider: str, zone: str) -> str:
    return f"pz.{provider}.{zone}"


@dataclass(frozen=True, slots=True)
class Sample:
    """Concrete values for one call: the shard it runs in and what the other tags are."""

    shard: str
    client: str = "team-a"
    """The caller (a grant's client; an admin for a create)."""
    net: str = "203.0.113.0/24"
    lock: str = ""
    """The lock a script reads or writes ('': none, an unfenced write; a pool's,
    `pool:<name>`, is in that pool's shard)."""
    elsewhere: str = "pz.gcp.europe-west1-b"
    """The shard of another lease holding the same address."""


def kind_of(template: KeyTemplate, sample: Sample) -> str:
    """Where the proposed layout puts a key: SHARD or the kind of its own tag. KeyError: a
    family the layout does not place (a script added a key: place it here)."""
    if (template.family, template.context) in ELSEWHERE:
        return ELSEWHERE[(template.family, template.context)]
    if template.family == "lock":
        own_pool = sample.shard == pool_shard(sample.lock.removeprefix("pool:"))
        return SHARD if sample.lock.startswith("pool:") and own_pool else FLEET
    if template.family in SHARD_FAMILIES:
        return SHARD
    return OWN_TAG[template.family]


def tag_of(kind: str, sample: Sample) -> str:
    return {
        SHARD: sample.shard,
        ADDRESS: f"net.{sample.net}",
        CLIENT: f"client.{sample.client}",
        LEASE_ELSEWHERE: sample.elsewhere,
        FLEET: "fleet",
    }[kind]


def today_key(template: KeyTemplate, values: Mapping[str, str] | None = None) -> str:
    """The key as the scripts build it now: the namespace, no hash tag."""
    return f"{NAMESPACE}:{template.render(values or {})}"


def proposed_key(template: KeyTemplate, sample: Sample) -> str:
    """The key with its hash tag after the namespace (`pf:{pool.scrapers}:proxy:<id>`)."""
    tag = tag_of(kind_of(template, sample), sample)
    return f"{NAMESPACE}:{{{tag}}}:{template.render({})}"


def touched(script: Script, sample: Sample) -> list[KeyTemplate]:
    """The script's keys a call with this sample may touch: fenced_out reads no lock for
    an unfenced write (lock '')."""
    return [t for t in script.keys if t.family != "lock" or sample.lock]


def slots_today(script: Script, values: Mapping[str, str] | None = None) -> set[int]:
    return {key_slot(today_key(t, values)) for t in script.keys}


def slots_proposed(script: Script, sample: Sample) -> dict[str, set[int]]:
    """Kind -> the slots of the keys of that kind the script may touch."""
    out: dict[str, set[int]] = {}
    for t in touched(script, sample):
        out.setdefault(kind_of(t, sample), set()).add(key_slot(proposed_key(t, sample)))
    return out


def off_shard(script: Script, sample: Sample) -> dict[str, frozenset[str]]:
    """Kind -> the families of the keys not in the shard's slot (what stays global)."""
    home = key_slot(f"{{{sample.shard}}}")
    out: dict[str, set[str]] = {}
    for t in touched(script, sample):
        if key_slot(proposed_key(t, sample)) != home:
            out.setdefault(kind_of(t, sample), set()).add(t.family)
    return {k: frozenset(v) for k, v in out.items()}


# ---- which shards a grant goes to ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Fleet:
    """What the router knows (from the pools' specs and the providers' config): the
    provider/zones each pool runs on, and those with pool-less proxies."""

    pools: Mapping[str, frozenset[tuple[str, str]]]
    plain: frozenset[tuple[str, str]]

    def shards(self) -> list[str]:
        return [pool_shard(p) for p in sorted(self.pools)] + [
            zone_shard(p, z) for p, z in sorted(self.plain)
        ]


def grant_shards(fleet: Fleet, *, pool: str = "", provider: str = "", zone: str = "") -> list[str]:
    """The shards a grant with this selector may find a proxy in, each one script call
    (tried in turn until one grants): its pool's alone; else every shard holding proxies of
    the provider (and zone), pools' included, as a grant without a pool takes them today."""
    if pool:
        return [pool_shard(pool)] if pool in fleet.pools else []

    def matches(where: tuple[str, str]) -> bool:
        return (not provider or where[0] == provider) and (not zone or where[1] == zone)

    pooled = [pool_shard(p) for p, at in sorted(fleet.pools.items()) if any(map(matches, at))]
    return pooled + [zone_shard(p, z) for p, z in sorted(fleet.plain) if matches((p, z))]
