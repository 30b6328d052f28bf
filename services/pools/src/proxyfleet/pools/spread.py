"""Where new members go: which provider (by weight, skipping the full and the failing, the
weight-0 fallbacks only when no weighted one can take it) and which zone (the one with the
fewest members, in the pool's order on a tie). Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from proxyfleet.pools.view import Create, Member, ProviderRoom

FAILURES_TO_PAUSE = 3
"""Failed creates of one provider within FAILURE_WINDOW that pause its creates."""
FAILURE_WINDOW = 300.0
MAX_PAUSE = 300.0


@dataclass(frozen=True, slots=True)
class Placed:
    creates: list[Create]
    short: int
    """Creates wanted that no provider could take."""
    blocked_by: str = ""
    """Why (the providers full or failing), when short."""


def pause_until(failures: Sequence[float], now: float) -> float:
    """Until when a provider's creates pause after failures at these times: from the
    FAILURES_TO_PAUSE-th within FAILURE_WINDOW on, 10 s after the last one, doubling per
    further failure up to MAX_PAUSE. 0: no pause."""
    recent = sorted(t for t in failures if now - t <= FAILURE_WINDOW)
    if len(recent) < FAILURES_TO_PAUSE:
        return 0.0
    pause = min(MAX_PAUSE, 10.0 * 2 ** (len(recent) - FAILURES_TO_PAUSE))
    until = recent[-1] + pause
    return until if until > now else 0.0


def place(
    count: int, providers: Sequence[ProviderRoom], active: Sequence[Member], now: float
) -> Placed:
    """`count` creates spread over the providers and zones, given the members in rotation."""
    per_provider = Counter(m.provider for m in active)
    per_zone = Counter(m.zone for m in active)
    room = {p.name: p.room for p in providers}
    creates: list[Create] = []
    for _ in range(count):
        usable = [p for p in providers if _usable(p, room[p.name], now)]
        weighted = [p for p in usable if p.weight > 0] or usable
        if not weighted:
            return Placed(creates, count - len(creates), _why_blocked(providers, room, now))
        best = min(weighted, key=lambda p: (per_provider[p.name] + 1) / max(p.weight, 1))
        zone = min(best.zones, key=lambda z: (per_zone[z], best.zones.index(z)))
        creates.append(Create(best.name, zone))
        per_provider[best.name] += 1
        per_zone[zone] += 1
        left = room[best.name]
        if left is not None:
            room[best.name] = left - 1
    return Placed(creates, 0)


def _usable(p: ProviderRoom, room: int | None, now: float) -> bool:
    """Serves a zone of the pool, listed since the store began, not paused, not full."""
    return bool(p.zones) and p.listed and p.failing_until <= now and (room is None or room > 0)


def _why_blocked(providers: Sequence[ProviderRoom], room: dict[str, int | None], now: float) -> str:
    reasons = []
    for p in providers:
        if not p.listed:
            reasons.append(f"{p.name}: its resources not listed since the store began (waiting "
                           "for its provisioner to re-adopt what outlived a reset)")  # fmt: skip
        elif p.failing_until > now:
            reasons.append(
                f"{p.name}: creates paused {p.failing_until - now:.0f} s after failures"
                + (f" ({p.failing_reason})" if p.failing_reason else "")
            )
        elif (left := room[p.name]) is not None and left <= 0:
            reasons.append(f"{p.name}: at its max_proxies ({p.max_proxies})")
    return "; ".join(reasons)
