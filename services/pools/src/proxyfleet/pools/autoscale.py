"""Autoscale on demand: the pool's desired size from its free members and refused grants.
Pure: the marks (since when free members have been short, or in excess) come in and go out,
kept with the pool so that another replica carries on where this one stopped."""

from __future__ import annotations

from dataclasses import dataclass

from proxyfleet.common.domain.pool_spec import Autoscale, AutoscaleInputs, Decision


@dataclass(frozen=True, slots=True)
class Scaling:
    desired: int
    inputs: AutoscaleInputs
    """What was looked at, with the marks to keep (low_since, high_since)."""
    decision: Decision | None = None


def scale(
    a: Autoscale,
    desired: int,
    *,
    free: int,
    starting: int,
    refused: int,
    low_since: float,
    high_since: float,
    now: float,
) -> Scaling:
    """Up a step when free members (with those still starting) stay below target_free for
    scale_up_after, or at once when grants were refused and nothing is starting; down a
    step when free members stay above max_free for scale_down_after with nothing starting.
    Always within [min, max]."""
    bounded = min(max(desired, a.min), a.max)
    refused_now = refused > 0 and starting == 0
    short = free + starting < a.target_free or refused_now
    excess = free > a.high_water and starting == 0
    low = (low_since or now) if short else 0.0
    high = (high_since or now) if excess else 0.0
    new, why = bounded, f"desired {desired} outside autoscale [{a.min}, {a.max}]"
    if short and bounded < a.max and (refused_now or now - low >= a.scale_up_after):
        new = min(a.max, bounded + a.step)
        why = (
            f"{refused} grants refused (503) since the last pass, {free} free"
            if refused_now
            else f"{free} free and {starting} starting, below target_free {a.target_free} "
            f"for {now - low:.0f} s"
        )
        low = now  # the next step waits its turn again
    elif excess and bounded > a.min and now - high >= a.scale_down_after:
        new = max(a.min, bounded - a.step)
        why = f"{free} free, above max_free {a.high_water} for {now - high:.0f} s"
        high = now
    inputs = AutoscaleInputs(
        free=free, starting=starting, refused=refused, target_free=a.target_free,
        max_free=a.high_water, low_since=low, high_since=high,
    )  # fmt: skip
    if new == desired:
        return Scaling(desired, inputs)
    action = "scale_up" if new > desired else "scale_down"
    return Scaling(new, inputs, Decision(
        time=now, action=action, from_size=desired, to_size=new, reason=why
    ))  # fmt: skip
