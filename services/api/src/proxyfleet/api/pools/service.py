"""Pools the API declares (owner `api`): checked against the providers config, written to
the pool store (one script each, with its `pool.*` event), read back with their status.
A pool declared by the config file or a ProxyPool resource is read here but changed only
by its owner (PoolOwned, a 409)."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from proxyfleet.common.core.errors import Conflict, NotFound
from proxyfleet.common.domain.pool_spec import Owner, PoolRecord, PoolSpec
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.providers import ProvidersConfig
from proxyfleet.common.providers.pool_checks import check_pool
from proxyfleet.common.store import PoolOwned, PoolStore

log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Applied:
    pool: PoolRecord
    created: bool
    """The pool did not exist before (a 201), rather than replaced or unchanged."""


def spec_json(spec: PoolSpec) -> dict[str, object]:
    """A spec as decoded JSON (defaults left out), what a merge patch applies to."""
    raw = msgspec.to_builtins(spec)
    assert isinstance(raw, dict)
    return raw


class PoolService:
    def __init__(self, store: PoolStore, config: ProvidersConfig) -> None:
        self._store = store
        self._config = config

    async def all(self) -> list[PoolRecord]:
        """Every pool, oldest first, whoever declares it."""
        return await self._store.all()

    async def get(self, name: str) -> PoolRecord:
        pool = await self._store.get(name)
        if pool is None:
            raise NotFound(f"pool {name} not found")
        return pool

    async def editable(self, name: str) -> PoolRecord:
        """The pool, when the API may change it: NotFound, PoolOwned when another source
        declares it, Conflict (pool_deleting) while it is being deleted."""
        return _editable(await self.get(name))

    async def apply(self, name: str, spec: PoolSpec, *, expected_gen: int | None = None) -> Applied:
        """Declare `name` or replace its spec (nothing changes when it is the same).
        PoolOwned and pool_deleting are answered before the spec is checked, so a pool
        the config file declares is a 409 whatever the body; InvalidInput (invalid_pool)
        naming the field; Conflict when `expected_gen` is not the pool's generation."""
        current = await self._store.get(name)
        if current is not None:
            _editable(current)
        check_pool(name, spec, self._config)
        applied = await self._store.apply(name, spec, Owner.API, expected_gen=expected_gen)
        created = applied.changed and applied.gen == 1
        if applied.changed:
            log.info("api.pool_applied", pool=name, gen=applied.gen, created=created)
        return Applied(await self.get(name), created)

    async def delete(self, name: str, *, keep_proxies: bool) -> PoolRecord | None:
        """Ask for the pool's delete (its controller drains and deletes its members, then
        the pool); the pool as it is now. With keep_proxies, remove it at once and leave
        its members to the plain fleet: None."""
        before = await self.get(name)
        started = await self._store.delete(name, Owner.API, keep_proxies=keep_proxies)
        log.info("api.pool_deleting", pool=name, keep_proxies=keep_proxies, started=started)
        if keep_proxies:
            return None
        after = await self._store.get(name)
        # Gone already: it had no member left and its controller removed it meanwhile.
        return after if after is not None else msgspec.structs.replace(before, deleting=True)


def _editable(pool: PoolRecord) -> PoolRecord:
    if pool.owner is not Owner.API:
        raise PoolOwned(pool.name, pool.owner.value, pool.owner_ref)
    if pool.deleting:
        raise Conflict(f"pool {pool.name} is being deleted", code="pool_deleting")
    return pool
