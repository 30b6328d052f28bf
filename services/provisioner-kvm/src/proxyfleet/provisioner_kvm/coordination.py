"""What the KVM provisioner's creates share beyond one create: the host each proxy's VM
build began on (placement pins) and the upload of a base image to a host (upload locks).

Two ports, each with an implementation for one process (`LocalPins`, `LocalUploads`: a
lone provisioner, and the tests) and one in Redis for every replica of a provider
(`shared`), which the service builds."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from proxyfleet.common.core.clock import Clock

PIN_TTL = 3600.0
"""Seconds a pin lasts after the last attempt that built on its host. Above a create's
whole delivery budget with the defaults (8 deliveries of up to address_timeout, 300 s, plus
the backoff between them: about 44 minutes), so a redelivery never outlives it; bounded, so
a pin left by a lost create does not hold its proxy to a dead host forever."""

Fence = Callable[[], Awaitable[None]]
"""Raises TemporaryProviderError unless the upload lock is still this holder's (checked
before an upload is marked finished)."""


class PlacementPins(Protocol):
    """Proxy -> the host a create began building its VM on, until a create returns or the
    proxy is deleted, so a redelivery (to any replica) while that host is down waits for it
    instead of building a second VM elsewhere. Raise provider errors only."""

    async def get(self, proxy_id: str) -> str | None: ...

    async def put(self, proxy_id: str, host: str) -> None:
        """Pin `proxy_id` to `host` for the pin ttl from now."""
        ...

    async def drop(self, proxy_id: str) -> None: ...


class UploadLocks(Protocol):
    """One upload of a base image to a host at a time."""

    def hold(self, host: str, volume: str) -> AbstractAsyncContextManager[Fence]:
        """Held while this create uploads `volume` to `host`: waits (bounded) while another
        holds it, then raises TemporaryProviderError."""
        ...


class LocalPins:
    """Pins in this process's memory, expiring by the injected clock."""

    def __init__(self, clock: Clock, ttl: float = PIN_TTL) -> None:
        self._clock = clock
        self._ttl = ttl
        self._pins: dict[str, tuple[str, float]] = {}

    async def get(self, proxy_id: str) -> str | None:
        pin = self._pins.get(proxy_id)
        if pin is None:
            return None
        host, until = pin
        # Also expired when the clock went back past the pin: never longer than the ttl.
        if not until - self._ttl <= self._clock.now() < until:
            del self._pins[proxy_id]
            return None
        return host

    async def put(self, proxy_id: str, host: str) -> None:
        self._pins[proxy_id] = (host, self._clock.now() + self._ttl)

    async def drop(self, proxy_id: str) -> None:
        self._pins.pop(proxy_id, None)


class LocalUploads:
    """No lock beyond the process: its host sessions' volume locks already serialise its
    own uploads of a volume."""

    @contextlib.asynccontextmanager
    async def hold(self, host: str, volume: str) -> AsyncIterator[Fence]:
        yield _unfenced


async def _unfenced() -> None:
    return None
