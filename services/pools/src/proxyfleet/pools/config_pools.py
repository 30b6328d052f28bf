"""The providers config's `pools:` section, kept applied: each pool declared there is
applied (owner: the config file) at start and on every pass, so it survives a Redis reset;
a pool the file declared and no longer does is deleted (its members drain). A pool of the
same name declared elsewhere is left alone, and said so once."""

from __future__ import annotations

from proxyfleet.common.core.errors import Conflict
from proxyfleet.common.domain.pool_spec import Owner, PoolSpec
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.store import PoolOwned, PoolStore

log = get_logger("proxyfleet.pools")


class ConfigPools:
    def __init__(self, pools: PoolStore, declared: dict[str, PoolSpec], path: str) -> None:
        self._pools = pools
        self._declared = declared
        self._path = path
        self._refused: set[str] = set()

    async def apply(self) -> None:
        for name, spec in self._declared.items():
            try:
                applied = await self._pools.apply(name, spec, Owner.CONFIG, self._path)
            except PoolOwned as exc:
                if name not in self._refused:
                    log.error(  # noqa: TRY400  (an expected refusal, no traceback)
                        "pools.config_pool_refused", pool=name, error=str(exc)
                    )
                    self._refused.add(name)
                continue
            except Conflict as exc:  # being deleted: applied again once it is gone
                log.info("pools.config_pool_waits", pool=name, error=str(exc))
                continue
            self._refused.discard(name)
            if applied.changed:
                log.info("pools.config_pool_applied", pool=name, gen=applied.gen)
        for record in await self._pools.all():
            if (
                record.owner is Owner.CONFIG
                and record.name not in self._declared
                and not record.deleting
                and await self._pools.delete(record.name, Owner.CONFIG)
            ):
                log.info("pools.config_pool_deleted", pool=record.name, file=record.owner_ref)
