"""Which host of its zone a proxy's VM goes on: pure, from what a survey of the zone's
hosts found, so every rule is tested without libvirt.

The rules, in order:
1. A host whose listing holds the proxy's domain: adopt it there (a retried or redelivered
   create never makes a second one).
2. A host a create (of any replica, before a restart too) already started building the
   proxy on (`pins`): build there again when it answers (what the earlier attempt left is
   reused); when it does not, wait for it (a temporary error): it may hold the domain, and
   another host would get a duplicate.
3. Otherwise the answering host with the most free room (`max_proxies` minus the
   Proxyfleet domains it runs and the creates this process has placed on it and not seen
   through; a host without a limit has room without end), then the fewest proxies, then
   the name.
4. No host answers: a temporary error naming every host of the zone (permanent only when
   every one failed permanently: a refused key, a host key that does not match). Hosts
   that answer but are all at their limit: a temporary error naming their counts.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Answered:
    """A host of the zone whose domains were listed."""

    name: str
    proxies: frozenset[str]
    """Proxy ids of the Proxyfleet domains on it (any installation's: they share it)."""
    max_proxies: int | None = None
    """Its limit from the config; None: no limit."""


@dataclass(frozen=True, slots=True)
class Down:
    """A host of the zone that could not be listed (or is still marked down)."""

    name: str
    error: str
    permanent: bool = False
    """The failure cannot pass by itself (a refused key, a wrong host key)."""
    held: bool = False
    """Not tried now: an earlier failure's mark holds (`DownMarks`)."""


HostReport = Answered | Down


@dataclass(frozen=True, slots=True)
class Adopt:
    """The proxy's domain is on `host`."""

    host: str


@dataclass(frozen=True, slots=True)
class Build:
    """Build the proxy's domain on `host`."""

    host: str


@dataclass(frozen=True, slots=True)
class NoHost:
    """No host of the zone can take the proxy now."""

    message: str
    permanent: bool = False


Choice = Adopt | Build | NoHost


def choose_host(
    proxy_id: str,
    zone: str,
    reports: Sequence[HostReport],
    pins: Mapping[str, str],
    under_way: Mapping[str, str] | None = None,
) -> Choice:
    """Where `proxy_id`'s domain is, or goes, among its zone's hosts (`reports`, one per
    host). `pins` maps proxies whose domain a create started building, and no create has
    seen through, to their host (rule 2; the adapter passes this proxy's pin, read from the
    pins every replica shares); `under_way` the creates this process is placing or building
    right now. Both count on their host in rule 3."""
    ordered = sorted(reports, key=lambda r: r.name)
    answered = [r for r in ordered if isinstance(r, Answered)]
    down = [r for r in ordered if isinstance(r, Down)]
    for host in answered:
        if proxy_id in host.proxies:
            return Adopt(host.name)
    pinned = pins.get(proxy_id)
    if pinned is not None:
        if any(h.name == pinned for h in answered):
            return Build(pinned)
        for gone in down:
            if gone.name == pinned:
                return NoHost(
                    f"host {pinned} (zone {zone}) may hold this proxy's domain from an "
                    f"earlier attempt and is down; waiting for it: {gone.error}"
                )
        # A pin on a host no longer in the zone's config: nothing to wait for.
    if not answered:
        names = ", ".join(h.name for h in down)
        errors = "; ".join(h.error for h in down)
        return NoHost(
            f"every host of zone {zone} is down ({names}): {errors}",
            permanent=bool(down) and all(h.permanent for h in down),
        )
    elsewhere = {**(under_way or {}), **pins}
    loads = {h.name: _load(h, proxy_id, elsewhere) for h in answered}
    rooms = {h.name: _room(h.max_proxies, loads[h.name]) for h in answered}
    open_hosts = [h for h in answered if rooms[h.name] > 0]
    if not open_hosts:
        counts = ", ".join(f"{h.name} {loads[h.name]}/{h.max_proxies}" for h in answered)
        also = f"; down: {', '.join(h.name for h in down)}" if down else ""
        return NoHost(f"every host of zone {zone} that answers is full ({counts}){also}")
    best = min(open_hosts, key=lambda h: (-rooms[h.name], loads[h.name], h.name))
    return Build(best.name)


def _load(host: Answered, proxy_id: str, placed: Mapping[str, str]) -> int:
    """The proxies on `host`: listed, plus this process's creates placed there."""
    building = {p for p, h in placed.items() if h == host.name and p != proxy_id}
    return len(host.proxies | building)


def _room(max_proxies: int | None, load: int) -> float:
    return math.inf if max_proxies is None else max_proxies - load


class DownMarks:
    """Hosts left out of the survey for `hold` seconds after they failed, so a zone's
    creates do not each wait for a dead host's connect timeout (the adapter still tries
    them when no other host fits). Time is passed in."""

    def __init__(self, hold: float) -> None:
        self._hold = hold
        self._marks: dict[str, tuple[float, Down]] = {}

    def mark(self, report: Down, now: float) -> None:
        self._marks[report.name] = (now + self._hold, report)

    def get(self, host: str, now: float) -> Down | None:
        """The host's failure while its mark holds; None: survey it."""
        mark = self._marks.get(host)
        if mark is None:
            return None
        until, report = mark
        # Also expired when the clock went back past the mark: never longer than `hold`.
        if not until - self._hold <= now < until:
            del self._marks[host]
            return None
        return dataclasses.replace(report, held=True)
