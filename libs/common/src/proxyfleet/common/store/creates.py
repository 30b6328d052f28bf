"""The create script's arguments and answers (store/lua/create.lua): a batch of proxies of
one provider, its `max_proxies` and an optional idempotency key, checked with the writes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from proxyfleet.common.core.errors import Conflict
from proxyfleet.common.store.codec import proxy_to_hash
from proxyfleet.common.store.replies import CreateReply, FencedOut, backlogged
from proxyfleet.common.wire.models import Proxy


@dataclass(frozen=True, slots=True)
class Idempotency:
    """A create's idempotency key (scoped by the caller) and its body's fingerprint."""

    key: str
    fingerprint: str
    ttl: int
    """Seconds the key is remembered."""


@dataclass(frozen=True, slots=True)
class Fence:
    """A write that goes ahead only while `token` holds the lock `lock` (store.Locks): the
    pool controller's, so a replica that lost its pool's lock while paused writes nothing."""

    lock: str
    token: str


@dataclass(frozen=True, slots=True)
class Created:
    ids: list[str]
    """The proxies created, or (a replay) those the first create with the key made."""
    replayed: bool = False


def create_args(
    proxies: Sequence[Proxy],
    max_proxies: int | None,
    idem: Idempotency | None,
    fence: Fence | None = None,
    high_water: int = 0,
) -> list[Any]:
    """What follows the event id and the time: provider, limit, key, fingerprint, key TTL,
    count, fence lock and token, the outbox's high-water mark, then each proxy as id,
    field count, fields."""
    flat: list[Any] = [
        proxies[0].provider if proxies else "",
        -1 if max_proxies is None else max_proxies,
        idem.key if idem else "",
        idem.fingerprint if idem else "",
        idem.ttl if idem else 0,
        len(proxies),
        fence.lock if fence else "",
        fence.token if fence else "",
        high_water,
    ]
    for p in proxies:
        fields = proxy_to_hash(p)
        flat += [p.id, len(fields)]
        for k, v in fields.items():
            flat += [k, v]
    return flat


def decode_created(proxies: Sequence[Proxy], res: list[Any], high_water: int = 0) -> Created:
    """The script's answer, or the Conflict (or backlog's Unavailable) it stands for."""
    reply = CreateReply(int(res[0]))
    if reply is CreateReply.BACKLOG:
        raise backlogged(int(res[1]), high_water)
    if reply is CreateReply.OVER_MAX:
        existing, limit = int(res[1]), int(res[2])
        provider = proxies[0].provider
        raise Conflict(
            f"provider {provider} has {existing} proxies and a max_proxies of {limit}: "
            f"creating {len(proxies)} more would pass it (failed and deleted proxies "
            "do not count)",
            code="max_proxies",
        )
    if reply is CreateReply.KEY_REUSED:
        raise Conflict(
            "this Idempotency-Key was used with a different request body; use a new key "
            "for a different create",
            code="idempotency_key_reused",
        )
    if reply is CreateReply.FENCED_OUT:
        raise FencedOut("the pool's lock passed to another replica: nothing created")
    if reply is CreateReply.REPLAYED:
        return Created([str(i) for i in res[1:]], replayed=True)
    made = zip(proxies, res[1:], strict=True)
    return Created([p.id for p, one in made if int(one) == CreateReply.CREATED])
