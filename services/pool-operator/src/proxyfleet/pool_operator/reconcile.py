"""One look at a ProxyPool resource against the pools store, level-triggered: whatever
happened before (a missed event, a Redis reset without persistence, a restart), the store
ends up holding the resource's spec, owned by it, and the status to write back says how
the pool is. A spec the checks refuse changes nothing in the store; neither does a name
another source (or the same name in another namespace) owns.

A deleted resource: the pool is asked to go (its controller drains and deletes the
members, then removes it), and the resource's finalizer stays until it has."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import Conflict, NotFound
from proxyfleet.common.domain.pool_spec import Owner, PoolRecord, PoolSpec, SpecProblem
from proxyfleet.common.providers import ProvidersConfig
from proxyfleet.common.store import PoolOwned, PoolStore
from proxyfleet.pool_operator.spec import owner_ref, read_spec
from proxyfleet.pool_operator.status import Verdict, as_json, build_status


@dataclass(frozen=True, slots=True)
class Outcome:
    status: dict[str, Any]
    """The status the resource should carry now."""
    verdict: Verdict | None
    """The operator's finding, when it has one (invalid spec, owner conflict, ...)."""
    applied: bool
    """Whether this look wrote the spec to the store."""


@dataclass(frozen=True, slots=True)
class Release:
    gone: bool
    """The pool is gone (or was never this resource's): the finalizer may go."""
    members: int = 0
    """Members left while it is not."""
    status: dict[str, Any] | None = None


class Reconciler:
    def __init__(self, pools: PoolStore, config: ProvidersConfig, clock: Clock) -> None:
        self._pools = pools
        self._config = config
        self._clock = clock

    async def declare(
        self,
        namespace: str,
        name: str,
        raw_spec: Any,
        generation: int,
        previous: Any,
    ) -> Outcome:
        """Make the store hold the resource's spec; the status to write back."""
        ref = owner_ref(namespace, name)
        verdict: Verdict | None = None
        spec: PoolSpec | None = None
        try:
            spec = read_spec(name, raw_spec, self._config)
        except SpecProblem as problem:
            verdict = Verdict("InvalidSpec", f"{problem.field}: {problem.message}")
        record = await self._pools.get(name)
        applied = False
        if record is not None and not _ours(record, ref):
            verdict = _conflict(record)
        elif record is not None and record.deleting:
            verdict = verdict or _still_deleting(name)
        elif spec is not None and (record is None or record.spec != spec):
            verdict, applied = await self._apply(name, spec, ref, record)
            record = await self._pools.get(name)
        caught_up = (
            record is not None
            and record.spec == spec
            and record.status is not None
            and record.status.observed_gen >= record.gen
        )
        status = build_status(
            name, ref, generation, record, verdict, previous or {}, self._clock.now(),
            caught_up=caught_up and verdict is None,
        )  # fmt: skip
        return Outcome(as_json(status), verdict, applied)

    async def _apply(
        self, name: str, spec: PoolSpec, ref: str, record: PoolRecord | None
    ) -> tuple[Verdict | None, bool]:
        try:
            await self._pools.apply(
                name, spec, Owner.KUBERNETES, ref, expected_gen=record.gen if record else 0
            )
        except PoolOwned as exc:
            return Verdict("OwnerConflict", str(exc), counts=False), False
        except Conflict as exc:
            if exc.code == "pool_deleting":
                return _still_deleting(name), False
            return None, False  # changed meanwhile: the next look decides
        return None, True

    async def release(
        self, namespace: str, name: str, generation: int, previous: Any, *, keep_proxies: bool
    ) -> Release:
        """One look at the pool of a deleted resource: ask for its delete (with
        keep_proxies: remove it now, its members left to the plain fleet) and say whether
        it is gone."""
        ref = owner_ref(namespace, name)
        record = await self._pools.get(name)
        if record is None or not _ours(record, ref):
            return Release(gone=True)
        try:
            if keep_proxies:
                await self._pools.delete(name, Owner.KUBERNETES, keep_proxies=True)
                return Release(gone=True)
            if not record.deleting:
                await self._pools.delete(name, Owner.KUBERNETES)
        except (NotFound, PoolOwned):
            return Release(gone=True)
        members = len(await self._pools.members(name))
        verdict = Verdict("Deleting", f"{members} members left to drain and delete")
        status = build_status(
            name, ref, generation, record, verdict, previous or {}, self._clock.now(),
            caught_up=False,
        )  # fmt: skip
        return Release(gone=False, members=members, status=as_json(status))


def _ours(record: PoolRecord, ref: str) -> bool:
    return record.owner is Owner.KUBERNETES and record.owner_ref == ref


def _conflict(record: PoolRecord) -> Verdict:
    message = str(PoolOwned(record.name, record.owner.value, record.owner_ref))
    return Verdict("OwnerConflict", message, counts=False)


def _still_deleting(name: str) -> Verdict:
    return Verdict(
        "PoolDeleting",
        f"pool {name} is being deleted (its members drain first): it is declared again "
        "once it is gone",
    )
