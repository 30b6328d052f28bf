"""The provider port. Each provisioner service holds one adapter implementing it."""

from __future__ import annotations

from typing import Protocol

from proxyfleet.common.wire.models import ManagedResource, Provisioned, ProxySpec


class Provider(Protocol):
    """Infrastructure that runs proxies.

    Every method is idempotent: `create` for a proxy id that already has a resource adopts
    it; `delete` of a resource that is gone succeeds. Adapters raise only
    `TemporaryProviderError` or `PermanentProviderError` (wrapping their SDK's errors).
    """

    async def create(self, spec: ProxySpec) -> Provisioned:
        """Create (or adopt) the resources of one proxy and return where it listens."""
        ...

    async def delete(self, proxy_id: str, resource_id: str) -> None:
        """Delete every resource of one proxy; succeed when nothing is left."""
        ...

    async def list_managed(self) -> list[ManagedResource]:
        """Every resource of this installation that this provider manages."""
        ...

    async def close(self) -> None:
        """Release connections; resources keep running."""
        ...
