"""A lease of the asyncio client held for an `async with` block: granted on entry, renewed
by a background task, released on exit. The async module is written by hand and its
blocking twin generated from it (tools/unasync.py, `make generate`)."""

from __future__ import annotations

import asyncio
import contextlib
import types
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from proxyfleet.client import aio_background as background
from proxyfleet.client.errors import ApiError, TransportError
from proxyfleet.client.handle import LeaseHandle, LeaseView, lease_ended
from proxyfleet.client.models import Lease, ReleasedLease, RenewedLease, ReportedLease

if TYPE_CHECKING:
    from proxyfleet.client.aio import AsyncClient


class AsyncHeldLease(LeaseView):
    """A lease for the length of an `async with` block: proxy_url, proxies, httpx_proxy,
    lease_id, epoch, expires_at once entered."""

    def __init__(
        self,
        client: AsyncClient,
        *,
        ttl: float | None,
        max_wait: float | None,
        selector: Mapping[str, Any],
        granted: Lease | None = None,
    ) -> None:
        self._client = client
        self._granted = granted
        self._ttl = ttl
        self._max_wait = max_wait
        self._selector = dict(selector)
        self._handle: LeaseHandle | None = None
        self._stop = background.StopSignal()
        self._lock = asyncio.Lock()
        """Held while renewing, reporting or releasing: each uses the current epoch."""
        self._renewer: background.Worker | None = None

    async def __aenter__(self) -> AsyncHeldLease:
        lease = self._granted or await self._client.grant_lease(
            ttl=self._ttl, max_wait=self._max_wait, **self._selector
        )
        self._handle = LeaseHandle(lease, self._ttl)
        self._renewer = background.Worker(self._renew_until_stopped, name=f"renew-{lease.lease_id}")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._renewer is not None:
            await self._renewer.stop()
        if self._handle is None or self._handle.released:
            return
        if exc is not None:
            # The block's exception is what the caller needs; ours would hide it.
            with contextlib.suppress(ApiError, TransportError):
                await self.report("failed")
            with contextlib.suppress(ApiError, TransportError):
                await self.release()
            return
        try:
            await self.release()
        except ApiError as e:
            if not lease_ended(e):  # already released, expired or revoked: nothing to do
                raise

    async def _renew_until_stopped(self) -> None:
        handle = self.handle
        while not await self._stop.wait(handle.renew_every):
            try:
                await self.renew()
            except ApiError as e:
                if lease_ended(e):
                    handle.renew_error = e
                    return
            except TransportError:
                pass  # tried again next interval, while half the TTL is left

    async def renew(self) -> RenewedLease:
        handle = self.handle
        async with self._lock:
            # Waiting out a 503 longer than half the TTL would let the lease lapse.
            renewed = await self._client.renew_lease(
                handle.lease_id, handle.epoch, ttl=handle.ttl, max_wait=handle.renew_every
            )
            handle.renewed(renewed.expires_at, renewed.epoch)
        return renewed

    async def report(self, outcome: str, *, target: str | None = None) -> ReportedLease:
        """Tell the API how the proxy did: ok, blocked or failed."""
        handle = self.handle
        async with self._lock:
            return await self._client.report_lease(
                handle.lease_id, handle.epoch, outcome, target=target
            )

    async def report_blocked(self, *, target: str | None = None) -> ReportedLease:
        """The target blocked this proxy: the API bans it for the target."""
        return await self.report("blocked", target=target)

    async def release(self) -> ReleasedLease:
        """Release now (the `with` block's exit then does nothing more)."""
        handle = self.handle
        self._stop.set()
        async with self._lock:
            released = await self._client.release_lease(handle.lease_id, handle.epoch)
            handle.released = True
        return released
