"""Bodies of /v1/pools: a pool is answered as stored (proxyfleet.common.domain.pool_spec's
PoolRecord, its spec and its controller's status); a PUT body is a PoolSpec."""

from __future__ import annotations

import msgspec

from proxyfleet.common.domain.pool_spec import PoolRecord


class PoolList(msgspec.Struct, kw_only=True):
    items: list[PoolRecord]
    """Every pool, oldest first, whoever declares it (`owner`)."""


class KeptProxies(msgspec.Struct, kw_only=True):
    """A pool removed with keep_proxies=true: its members stay, in the plain fleet."""

    name: str
    kept_proxies: bool = True
