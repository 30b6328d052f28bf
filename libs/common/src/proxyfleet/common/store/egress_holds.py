"""Leasing by exit address: what the grant script is told about exclusivity, and how it
explains a grant it could not make.

The holds themselves live in Redis, written by the lease scripts (grant.lua takes them,
`end_lease` in _lib.lua gives them back): `egress_held:ip:<ip>`, `egress_held:net:<net>`
and `egress_held:subnet:<net>` (sets of lease ids, kept as hashes: field the lease id,
value 1), `egress_cool:ip:<ip>` and `egress_cool:net:<net>` (cooldown ends),
`client_egress:<client>` (a client's addresses and networks, counted, for `distinct`
grants). docs/egress.md says what each mode holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from proxyfleet.common.core.errors import Unavailable
from proxyfleet.common.domain.egress import EXCLUSIVE_MODES, EgressSettings, Exclusive
from proxyfleet.common.providers import ProvidersConfig

Distinct = Literal["ip", "subnet"]
"""What a `distinct` grant keeps apart from the client's other leases: their exit
addresses, or their exit networks (/24 or /64)."""

NOT_DISTINCT = "no proxy on an exit network this client does not already hold"


@dataclass(frozen=True, slots=True)
class Exclusivity:
    """Each provider's exclusivity mode (`ProviderConfig.egress.exclusive`); a pool's own
    `egress_exclusive` overrides it, read by the script from the pool's hash."""

    by_provider: Mapping[str, Exclusive] = field(default_factory=dict)
    default: Exclusive = EgressSettings().exclusive
    """The mode of a provider the config does not name (a proxy of a removed provider)."""

    @classmethod
    def of(cls, config: ProvidersConfig) -> Exclusivity:
        return cls({p.name: p.egress.exclusive for p in config.providers})

    def script_arg(self) -> str:
        """`ip,subnet,none;<default>;<provider>=<mode>,...`: the mode names (so the script
        names none of its own) and the modes, parsed by grant.lua on every call (a few
        microseconds for a handful of providers)."""
        modes = ",".join(f"{name}={mode}" for name, mode in sorted(self.by_provider.items()))
        return f"{','.join(EXCLUSIVE_MODES)};{self.default};{modes}"


def nothing_available(
    retry_after: float, stale: int, not_distinct: int, address_taken: int, max_age: float
) -> Unavailable:
    """The 503 of a grant that found nothing, saying why when candidates were skipped."""
    if not_distinct and not address_taken:
        # Only the client's own leases stood in the way: say so, apart from "all busy".
        return Unavailable(NOT_DISTINCT, retry_after, code="egress_not_distinct")
    if stale:
        # Said apart from "all busy": the usual cause is the health service not running.
        return Unavailable(
            f"no proxy available for this selector: {stale} skipped with no good probe in"
            f" the last {max_age:g} s (is the health service running?)",
            retry_after,
            code="probe_stale",
        )
    if not_distinct:
        return Unavailable(
            f"{NOT_DISTINCT}; {address_taken} more skipped for an exit address another lease"
            " holds or that is cooling down",
            retry_after,
            code="egress_not_distinct",
        )
    if address_taken:
        return Unavailable(
            f"no proxy available for this selector: {address_taken} skipped for an exit"
            " address another lease holds or that is cooling down",
            retry_after,
        )
    return Unavailable("no proxy available for this selector", retry_after)
