"""Pools: a named, declared set of interchangeable proxies that a controller keeps true.

The spec as every source states it (the API's `PUT /v1/pools/{name}` body, an entry of the
providers config's `pools:` section, a `ProxyPool` resource's spec), with its defaults and
the checks that need nothing but the spec itself (`spec_problem`); `pool_checks` holds
those against the providers config. The status the controller writes and the record the
API answers with are here too, so every reader decodes one shape. Pure: no I/O.
"""

from __future__ import annotations

import enum
from typing import Annotated

import msgspec

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.domain.egress import Exclusive
from proxyfleet.common.domain.strict_yaml import located

POOL_LABEL = "proxyfleet-pool"
"""The label every member carries (its value: the pool's name). Resources keep their
proxy's labels, so a member re-adopted after a store reset is a member again."""

MAX_POOL_SIZE = 10_000
"""Largest size (or autoscale maximum) a pool may declare."""

PoolName = Annotated[
    str,
    msgspec.Meta(
        pattern=r"^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$",
        description="1-63 lowercase letters, digits and '-', starting with a letter and "
        "not ending with '-' (a Kubernetes name and a GCE label value alike)",
    ),
]
ProviderName = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9-]{0,30}$")]
Zone = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")]
Seconds = Annotated[float, msgspec.Meta(gt=0)]
Count = Annotated[int, msgspec.Meta(ge=0, le=MAX_POOL_SIZE)]


class _Strict(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, omit_defaults=True):
    pass


class PoolProvider(_Strict):
    name: ProviderName
    """A provider instance of the providers config."""
    weight: Annotated[int, msgspec.Meta(ge=0, le=1000)] = 1
    """Share of the members this provider gets, relative to the others' weights; 0: a
    fallback, used only while every weighted provider is full or failing."""


class Autoscale(_Strict):
    """Size the pool to its demand, between `min` and `max` members."""

    min: Count
    max: Annotated[int, msgspec.Meta(ge=1, le=MAX_POOL_SIZE)]
    target_free: Count = 1
    """Scale up when fewer members than this are free (ready, not leased, not cooling down,
    counting those still starting), or when a grant for the pool was refused (503)."""
    max_free: Count | None = None
    """Scale down when more members than this are free; default: target_free + step."""
    scale_up_after: Seconds = 5.0
    """How long free members must stay below target_free before a step up."""
    scale_down_after: Seconds = 300.0
    """How long free members must stay above max_free before a step down."""
    step: Annotated[int, msgspec.Meta(ge=1, le=MAX_POOL_SIZE)] = 1
    """Members added or removed per decision."""

    @property
    def high_water(self) -> int:
        return self.max_free if self.max_free is not None else self.target_free + self.step


class AutoQuarantine(_Strict):
    """Quarantine a member that targets keep blocking (as Crawlee retires a session)."""

    blocked_targets: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 3
    """`blocked` reports from this many different targets..."""
    within: Seconds = 600.0
    """...within this many seconds quarantine the member."""


class PoolSpec(_Strict):
    """What a pool declares. Durations are seconds."""

    provider: ProviderName | None = None
    """The provider of every member (shorthand for `providers: [{name: ...}]`)."""
    providers: list[PoolProvider] = []
    """Several providers with weights (spot first, standard as fallback, ...)."""
    zones: list[Zone] = []
    """Zones the members spread over evenly; empty: every zone of the providers. One zone
    pins the pool there."""
    labels: dict[str, str] = {}
    """Put on every member (besides `proxyfleet-pool: <name>`)."""
    placement: dict[str, str] = {}
    """Provider-specific placement of every member (as on a create)."""
    size: Count | None = None
    """How many ready members the pool keeps (with autoscale: where it starts)."""
    max_surge: Count = 1
    """Members it may create beyond its size while replacing or recycling."""
    max_unavailable: Count = 0
    """Ready members it may be short of its size while recycling."""
    replace_unhealthy_after: Seconds = 120.0
    """A member unhealthy this long is deleted and replaced."""
    max_age: Seconds | None = None
    """Members older than this are recycled (fresh egress IPs): replaced first, then
    drained and deleted; None: never."""
    drain_timeout: Seconds = 600.0
    """A draining member's lease is revoked (reason `recycled`) after this long."""
    autoscale: Autoscale | None = None
    quarantine: AutoQuarantine | None = None
    """Quarantine members by their `blocked` reports; None: only an admin quarantines."""
    egress_exclusive: Exclusive | None = None
    """What a lease on a member holds exclusively beyond the member: its exit address
    (`ip`), the address's /24 or /64 (`subnet`) or nothing (`none`); None: each member's
    provider's `egress.exclusive` (docs/egress.md)."""

    def weighted(self) -> list[PoolProvider]:
        """The providers, the shorthand expanded."""
        if self.provider is not None:
            return [PoolProvider(name=self.provider)]
        return list(self.providers)

    def start_size(self) -> int:
        """The desired size before any autoscale decision."""
        if self.autoscale is None:
            return self.size or 0
        a = self.autoscale
        return min(max(self.size if self.size is not None else a.min, a.min), a.max)

    def most_members(self) -> int:
        """The largest size this spec may reach (its capacity need)."""
        return self.autoscale.max if self.autoscale is not None else self.size or 0


class SpecProblem(ValueError):
    """A spec that cannot be a pool; `field` names it (dotted, as in the spec)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def spec_problem(spec: PoolSpec) -> SpecProblem | None:
    """The first problem of a spec on its own (none: None)."""
    if (spec.provider is None) == (not spec.providers):
        return SpecProblem("provider", "expected either provider or providers, not both")
    names = [p.name for p in spec.weighted()]
    if dup := next((n for i, n in enumerate(names) if n in names[:i]), None):
        return SpecProblem("providers", f"provider {dup!r} listed twice; expected each once")
    if spec.providers and not any(p.weight for p in spec.providers):
        return SpecProblem("providers", "expected at least one provider with weight > 0")
    if dup := next((z for i, z in enumerate(spec.zones) if z in spec.zones[:i]), None):
        return SpecProblem("zones", f"zone {dup!r} listed twice; expected each once")
    if POOL_LABEL in spec.labels:
        return SpecProblem(f"labels.{POOL_LABEL}", "reserved: the pool sets it on its members")
    if spec.autoscale is None and spec.size is None:
        return SpecProblem("size", "required (or autoscale with min and max)")
    if (a := spec.autoscale) is not None:
        if a.min > a.max:
            return SpecProblem("autoscale.min", f"expected at most max ({a.max}), got {a.min}")
        if spec.size is not None and not a.min <= spec.size <= a.max:
            return SpecProblem(
                "size", f"expected a size within autoscale [{a.min}, {a.max}], got {spec.size}"
            )
        if a.max_free is not None and a.max_free < a.target_free:
            return SpecProblem(
                "autoscale.max_free",
                f"expected at least target_free ({a.target_free}), got {a.max_free}",
            )
    if spec.max_age is not None and spec.max_surge + spec.max_unavailable == 0:
        return SpecProblem(
            "max_surge", "expected max_surge or max_unavailable above 0 with max_age: a "
            "recycle must either create a replacement first or drain first",
        )  # fmt: skip
    return None


def parse_pools(raw: object, path: str) -> dict[str, PoolSpec]:
    """The providers config's `pools:` section (a mapping of names to specs), converted
    pool by pool so that an error names the pool's key: ConfigError naming file and key."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: key pools: expected a mapping of pool names to specs")
    out: dict[str, PoolSpec] = {}
    for name, spec in raw.items():
        try:
            out[msgspec.convert(name, PoolName)] = msgspec.convert(spec, PoolSpec)
        except msgspec.ValidationError as exc:
            where, what = located(str(exc))
            key = f"pools.{name}" + (f".{where}" if where else "")
            raise ConfigError(f"{path}: key {key}: {what}") from None
    return out


# ---- what the controller writes and the API answers ------------------------------------


class Owner(enum.StrEnum):
    """Where a pool is declared: only that source may change or delete it."""

    API = "api"
    CONFIG = "config"
    KUBERNETES = "kubernetes"


class Condition(msgspec.Struct, kw_only=True):
    type: str
    """Ready, Progressing, CapacityExceeded, ProviderFailing, OwnerConflict."""
    status: bool
    reason: str = ""
    message: str = ""
    since: float = 0.0


class Decision(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The controller's last scaling decision and why."""

    time: float
    action: str
    """scale_up, scale_down."""
    from_size: int
    to_size: int
    reason: str


class AutoscaleInputs(msgspec.Struct, kw_only=True):
    """What the last autoscale look saw."""

    free: int
    starting: int
    refused: int
    """Grants for the pool refused (503) since the pass before."""
    target_free: int
    max_free: int
    low_since: float = 0.0
    """Since when free members have been below target (0: they are not)."""
    high_since: float = 0.0
    """Since when free members have been above max_free (0: they are not)."""


class PoolStatus(msgspec.Struct, kw_only=True):
    desired: int
    ready: int = 0
    """Ready members in rotation (not draining, not quarantined)."""
    leased: int = 0
    free: int = 0
    """Ready, not leased, not cooling down."""
    starting: int = 0
    """pending, provisioning or booting."""
    unhealthy: int = 0
    draining: int = 0
    quarantined: int = 0
    surge: int = 0
    """Members beyond the desired size (replacements and recycles in flight)."""
    oldest_age: float = 0.0
    """Seconds since the oldest member in rotation was created."""
    by_provider: dict[str, int] = {}
    by_zone: dict[str, int] = {}
    observed_gen: int = 0
    """The spec generation this status was computed from."""
    updated_at: float = 0.0
    controller: str = ""
    """The controller replica that wrote it."""
    last_decision: Decision | None = None
    autoscale: AutoscaleInputs | None = None
    conditions: list[Condition] = []


class PoolRecord(msgspec.Struct, kw_only=True):
    """A pool as stored: its declaration, who owns it, and its last status."""

    name: str
    spec: PoolSpec
    owner: Owner
    owner_ref: str = ""
    """Which file or resource declares it (config: the file's path; kubernetes:
    `<namespace>/<name>`)."""
    gen: int = 1
    """Raised by every change of the spec."""
    desired: int = 0
    """The size the controller keeps now: the spec's size, or autoscale's latest."""
    created_at: float = 0.0
    updated_at: float = 0.0
    deleting: bool = False
    """Being deleted: its members drain, then the pool goes."""
    status: PoolStatus | None = None
