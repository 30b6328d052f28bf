"""What the Lua scripts answer, one IntEnum per family of scripts: the scripts read these
names from the generated prelude (store/prelude.py), Python decodes by them.
A reply is a list whose first item is the code; what follows depends on the code (each
script's header says)."""

from __future__ import annotations

import enum
import re
from typing import Any

from proxyfleet.common.core.errors import Conflict, NotFound, Unavailable

FENCED_OUT = -9
"""Every fenced write's refusal: the fence's lock is no longer its token's."""


class ProxyReply(enum.IntEnum):
    """transition.lua, egress.lua, withhold.lua."""

    OK = 1
    UNCHANGED = 0
    """Nothing to do (withhold: already so)."""
    MISSING = -1
    STALE_GEN = -2
    PHASE_REFUSED = -3
    """Not allowed in the proxy's phase."""
    LEASED = -4
    FENCED_OUT = FENCED_OUT


class CreateReply(enum.IntEnum):
    """create.lua (the batch, then each id), adopt.lua."""

    CREATED = 1
    EXISTS = 0
    REPLAYED = 2
    """The idempotency key was seen with this body: what the first create made."""
    TOMBSTONED = -1
    """Adopting a proxy that was deleted."""
    OVER_MAX = -5
    KEY_REUSED = -6
    BACKLOG = -7
    """The outbox holds more than its high-water mark: nothing stored."""
    FENCED_OUT = FENCED_OUT


class LeaseReply(enum.IntEnum):
    """grant.lua, renew.lua, report.lua, release.lua."""

    OK = 1
    REPLAYED = 2
    """A grant retried with its idempotency key: the lease the first one made."""
    NONE_AVAILABLE = 0
    MISSING = -1
    """No such lease (or another owner's), or no such proxy for a named grant."""
    REFUSED = -2
    """The lease is no longer active, or the epoch is stale."""
    NOT_GRANTABLE = -3
    KEY_REUSED = -6
    LEASE_ENDED = -7
    """The lease an idempotency key granted has ended."""
    BACKLOG = -8
    """The outbox holds more than its high-water mark: nothing granted."""


class PoolReply(enum.IntEnum):
    """pool_apply.lua, pool_delete.lua, pool_event.lua, pool_remove.lua, pool_scale.lua."""

    DONE = 1
    UNCHANGED = 0
    OWNED = -1
    """Another source declares the pool."""
    DELETING = -2
    STALE_GEN = -3
    MISSING = -4
    FENCED_OUT = FENCED_OUT


FAMILIES: tuple[type[enum.IntEnum], ...] = (ProxyReply, CreateReply, LeaseReply, PoolReply)


def lua_name(family: type[enum.IntEnum]) -> str:
    """The Lua table of a family: ProxyReply -> PROXY_REPLY."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", family.__name__).upper()


BACKLOG_RETRY_AFTER = 5.0
"""Retry-After of a grant or create refused for the event backlog (it clears as fast as
NATS takes events back: seconds once NATS is back)."""


def backlogged(length: int, high_water: int) -> Unavailable:
    """A grant's or create's refusal while the outbox is over its high-water mark."""
    return Unavailable(
        f"{length} events wait for NATS, at or over the high-water mark of {high_water}: new"
        " grants and creates wait (releases, renewals and reports still go through)",
        BACKLOG_RETRY_AFTER,
        code="events_backlog",
    )


class FencedOut(Conflict):
    """The fence's lock is no longer its token's: another replica acts now."""

    code = "fenced_out"


def raise_proxy_refusal(proxy_id: str, res: list[Any], refused: str) -> ProxyReply:
    """The error a proxy script's refusal stands for (`refused` says what the proxy may not
    do in its phase), else the reply's code (OK, UNCHANGED)."""
    reply = ProxyReply(int(res[0]))
    if reply is ProxyReply.MISSING:
        raise NotFound(f"proxy {proxy_id} not found")
    if reply is ProxyReply.STALE_GEN:
        raise Conflict(f"proxy {proxy_id} changed (generation {res[1]}, phase {res[2]})")
    if reply is ProxyReply.PHASE_REFUSED:
        raise Conflict(f"proxy {proxy_id} is {res[2]}: {refused}")
    if reply is ProxyReply.LEASED:
        raise Conflict(f"proxy {proxy_id} is leased (lease {res[3]})")
    if reply is ProxyReply.FENCED_OUT:
        raise FencedOut("the pool's lock passed to another replica: nothing written")
    return reply
