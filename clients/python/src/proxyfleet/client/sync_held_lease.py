# Generated from aio_held_lease.py by tools/unasync.py (`make generate`); do not edit.
"""A lease of the blocking client held for a `with` block: granted on entry, renewed
by a background thread, released on exit. The async module is written by hand and its
blocking twin generated from it (tools/unasync.py, `make generate`)."""

from __future__ import annotations

import contextlib
import threading
import types
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from proxyfleet.client import sync_background as background
from proxyfleet.client.errors import ApiError, TransportError
from proxyfleet.client.handle import LeaseHandle, LeaseView, lease_ended
from proxyfleet.client.models import Lease, ReleasedLease, RenewedLease, ReportedLease

if TYPE_CHECKING:
    from proxyfleet.client.sync import Client


class HeldLease(LeaseView):
    """A lease for the length of a `with` block: proxy_url, proxies, httpx_proxy,
    lease_id, epoch, expires_at once entered."""

    def __init__(
        self,
        client: Client,
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
        self._lock = threading.Lock()
        """Held while renewing, reporting or releasing: each uses the current epoch."""
        self._renewer: background.Worker | None = None

    def __enter__(self) -> HeldLease:
        lease = self._granted or self._client.grant_lease(
            ttl=self._ttl, max_wait=self._max_wait, **self._selector
        )
        self._handle = LeaseHandle(lease, self._ttl)
        self._renewer = background.Worker(self._renew_until_stopped, name=f"renew-{lease.lease_id}")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.stop()
        if self._handle is None or self._handle.released:
            return
        if exc is not None:
            # The block's exception is what the caller needs; ours would hide it.
            with contextlib.suppress(ApiError, TransportError):
                self.report("failed")
            with contextlib.suppress(ApiError, TransportError):
                self.release()
            return
        try:
            self.release()
        except ApiError as e:
            if not lease_ended(e):  # already released, expired or revoked: nothing to do
                raise

    def _renew_until_stopped(self) -> None:
        handle = self.handle
        while not self._stop.wait(handle.renew_every):
            try:
                self.renew()
            except ApiError as e:
                if lease_ended(e):
                    handle.renew_error = e
                    return
            except TransportError:
                pass  # tried again next interval, while half the TTL is left

    def renew(self) -> RenewedLease:
        handle = self.handle
        with self._lock:
            # Waiting out a 503 longer than half the TTL would let the lease lapse.
            renewed = self._client.renew_lease(
                handle.lease_id, handle.epoch, ttl=handle.ttl, max_wait=handle.renew_every
            )
            handle.renewed(renewed.expires_at, renewed.epoch)
        return renewed

    def report(self, outcome: str, *, target: str | None = None) -> ReportedLease:
        """Tell the API how the proxy did: ok, blocked or failed."""
        handle = self.handle
        with self._lock:
            return self._client.report_lease(handle.lease_id, handle.epoch, outcome, target=target)

    def report_blocked(self, *, target: str | None = None) -> ReportedLease:
        """The target blocked this proxy: the API bans it for the target."""
        return self.report("blocked", target=target)

    def release(self) -> ReleasedLease:
        """Release now (the `with` block's exit then does nothing more)."""
        handle = self.handle
        self._stop.set()
        with self._lock:
            released = self._client.release_lease(handle.lease_id, handle.epoch)
            handle.released = True
        return released
