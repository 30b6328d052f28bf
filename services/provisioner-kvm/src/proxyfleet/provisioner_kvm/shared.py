"""The coordination ports in Redis, shared by every replica of one KVM provider: pins as
`<ns>:pin:kvm:<provider>:<proxy>` (store.Pins, with a ttl) and upload locks as
`<ns>:lock:kvm-upload:<provider>:<host>:<volume>` (store.Locks: token-checked, with a ttl,
renewed while the upload runs). A Redis outage is a temporary provider error here, so a
create that cannot read or write its pin is retried like one whose host is down."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import AsyncIterator, Iterator

from proxyfleet.common.core.errors import StoreUnavailable, TemporaryProviderError
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.observability.replica import replica_name
from proxyfleet.common.store import Locks, Pins
from proxyfleet.provisioner_kvm.coordination import PIN_TTL, Fence

log = get_logger("proxyfleet.kvm.shared")

UPLOAD_LOCK_TTL = 60.0
"""Seconds an upload lock lasts without a renewal: a replica that died mid-upload frees
the host's upload for the others this long after its last renewal."""
UPLOAD_WAIT = 120.0
"""Seconds a create waits for another replica's upload of the same base image to the same
host; then it fails as temporary and is retried (its next delivery waits again)."""


@contextlib.contextmanager
def _store_errors(what: str) -> Iterator[None]:
    try:
        yield
    except StoreUnavailable as exc:
        raise TemporaryProviderError(f"{what}: {exc}", exc.retry_after) from None


class SharedPins:
    """PlacementPins in Redis."""

    def __init__(self, pins: Pins, ttl: float = PIN_TTL) -> None:
        self._pins = pins
        self._ttl = ttl

    async def get(self, proxy_id: str) -> str | None:
        with _store_errors(f"proxy {proxy_id}: reading its placement pin"):
            return await self._pins.get(proxy_id)

    async def put(self, proxy_id: str, host: str) -> None:
        with _store_errors(f"proxy {proxy_id}: pinning it to host {host}"):
            await self._pins.put(proxy_id, host, self._ttl)

    async def drop(self, proxy_id: str) -> None:
        with _store_errors(f"proxy {proxy_id}: dropping its placement pin"):
            await self._pins.drop(proxy_id)


class SharedUploads:
    """UploadLocks in Redis: the first replica to miss a host's image cache uploads; the
    others wait for it (polling the lock), then find the base cached."""

    def __init__(
        self,
        locks: Locks,
        provider: str,
        *,
        token: str | None = None,
        ttl: float = UPLOAD_LOCK_TTL,
        wait: float = UPLOAD_WAIT,
        poll: float = 0.5,
    ) -> None:
        self._locks = locks
        self._provider = provider
        self._token = token or replica_name("kvm")
        self._ttl = ttl
        self._wait = wait
        self._poll = poll

    def lock_name(self, host: str, volume: str) -> str:
        return f"kvm-upload:{self._provider}:{host}:{volume}"

    @contextlib.asynccontextmanager
    async def hold(self, host: str, volume: str) -> AsyncIterator[Fence]:
        name = self.lock_name(host, volume)
        # One token per hold: two holds in one process (two adapters) must not share one.
        token = f"{self._token}-{secrets.token_hex(4)}"
        await self._take(name, token, host, volume)
        lost = asyncio.Event()
        renewer = asyncio.create_task(self._renew(name, token, lost))

        async def fence() -> None:
            if not lost.is_set():
                with _store_errors(f"host {host}: checking the upload lock of {volume}"):
                    if name in await self._locks.renew([name], token, self._ttl):
                        return
            raise TemporaryProviderError(
                f"host {host}: lost the upload lock of {volume} (Redis out for longer than "
                f"{self._ttl:g} s?); the upload is not marked finished and is redone"
            )

        try:
            yield fence
        finally:
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer
            try:
                await self._locks.release([name], token)
            except StoreUnavailable as exc:  # it expires after its ttl
                log.warning("kvm.upload_lock_release_failed", lock=name, error=str(exc))

    async def _take(self, name: str, token: str, host: str, volume: str) -> None:
        deadline = time.monotonic() + self._wait
        waiting = False
        while True:
            with _store_errors(f"host {host}: taking the upload lock of {volume}"):
                (holder,) = await self._locks.acquire([name], token, self._ttl)
            if holder == token:
                return
            if not waiting:
                waiting = True
                log.info("kvm.image_upload_waiting", host=host, volume=volume, holder=holder)
            if time.monotonic() >= deadline:
                raise TemporaryProviderError(
                    f"host {host}: {volume} is being uploaded by {holder}, still after "
                    f"{self._wait:g} s; trying again later"
                )
            await asyncio.sleep(self._poll)

    async def _renew(self, name: str, token: str, lost: asyncio.Event) -> None:
        """Extend the lock every third of its ttl while the upload runs; a renewal that
        finds it gone (expired, or another's) sets `lost` for the fence."""
        while True:
            await asyncio.sleep(self._ttl / 3)
            try:
                kept = await self._locks.renew([name], token, self._ttl)
            except StoreUnavailable as exc:  # the next renewal may reach Redis again
                log.warning("kvm.upload_lock_renew_failed", lock=name, error=str(exc))
                continue
            if name not in kept:
                log.warning("kvm.upload_lock_lost", lock=name)
                lost.set()
                return
