"""Redis-backed system of record: the proxy registry and the lease store (atomic Lua)."""

from proxyfleet.common.store.connection import connect_redis
from proxyfleet.common.store.creates import Created, Fence, Idempotency
from proxyfleet.common.store.installation import Installation, InstallationMarker
from proxyfleet.common.store.lease_terms import GrantRequest
from proxyfleet.common.store.leases import LeaseStore
from proxyfleet.common.store.locks import Locks
from proxyfleet.common.store.mux import LuaScript, ReplicaWait, ScriptMux, Unreplicated
from proxyfleet.common.store.outbox import Outbox, OutboxEntry
from proxyfleet.common.store.pins import Pins
from proxyfleet.common.store.pools import PoolOwned, PoolStore
from proxyfleet.common.store.provider_entries import AddedEntry, ProviderEntries
from proxyfleet.common.store.registry import ProbeClaim, ProxyRegistry
from proxyfleet.common.store.replies import FencedOut
from proxyfleet.common.store.transitions import TransitionResult

__all__ = [
    "AddedEntry",
    "Created",
    "Fence",
    "FencedOut",
    "GrantRequest",
    "Idempotency",
    "Installation",
    "InstallationMarker",
    "LeaseStore",
    "Locks",
    "LuaScript",
    "Outbox",
    "OutboxEntry",
    "Pins",
    "PoolOwned",
    "PoolStore",
    "ProbeClaim",
    "ProviderEntries",
    "ProxyRegistry",
    "ReplicaWait",
    "ScriptMux",
    "TransitionResult",
    "Unreplicated",
    "connect_redis",
]
