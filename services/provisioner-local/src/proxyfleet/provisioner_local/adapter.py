"""The local provider: the Provider port over LocalProxies (blocking work in threads,
every error translated to a temporary or permanent provider error)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from proxyfleet.common.core.errors import (
    ConfigError,
    PermanentProviderError,
    ProviderError,
    TemporaryProviderError,
)
from proxyfleet.common.core.ids import new_id
from proxyfleet.common.wire.models import ManagedResource, Provisioned, ProxySpec
from proxyfleet.provisioner_local.options import LocalOptions
from proxyfleet.provisioner_local.proxies import LocalProxies
from proxyfleet.provisioner_local.pure.config import LocalSettings

T = TypeVar("T")

THREADS = 16
"""Blocking operations at once (each create waits for its process to listen)."""


def local_options(
    settings: LocalSettings,
    installation_id: str,
    *,
    start_timeout: float = 10.0,
    stop_grace: float = 5.0,
) -> LocalOptions:
    """The adapter's options from the `local:` section of the providers config."""
    return LocalOptions(
        state_dir=Path(settings.state_dir),
        installation_id=installation_id,
        bind_host=settings.bind_host,
        advertise_host=settings.advertise_host,
        port_range=(settings.port_range[0], settings.port_range[1]),
        engine=settings.engine,
        connect_ports=list(settings.connect_ports),
        source_ranges=list(settings.source_ranges),
        egress_range=settings.egress_range,
        start_timeout=start_timeout,
        stop_grace=stop_grace,
    )


class LocalProvider:
    """Each proxy is a real proxy process on this machine (Squid, else proxy.py)."""

    def __init__(self, options: LocalOptions) -> None:
        """Raises ConfigError when the configured engine cannot run here."""
        try:
            self._proxies = LocalProxies(options)
        except (ValueError, OSError) as exc:
            raise ConfigError(f"local provider: {exc}") from None
        self.engine = self._proxies.engine
        self._executor = ThreadPoolExecutor(THREADS, thread_name_prefix="local-provider")
        self._closed = False

    async def create(self, spec: ProxySpec) -> Provisioned:
        return await self._run(f"create proxy {spec.proxy_id}", self._proxies.create, spec)

    async def delete(self, proxy_id: str, resource_id: str) -> None:
        await self._run(f"delete proxy {proxy_id}", self._proxies.delete, proxy_id)

    async def list_managed(self) -> list[ManagedResource]:
        return await self._run("list proxies", self._proxies.list_managed)

    async def dead(self) -> list[str]:
        """Proxies of this installation whose process died (the supervisor restarts them)."""
        return await self._run("find dead proxies", self._proxies.dead)

    async def revive(self, proxy_id: str) -> int:
        """Restart a dead proxy's process on its port; its pid (0: deleted meanwhile)."""
        return await self._run(f"restart proxy {proxy_id}", self._proxies.revive, proxy_id)

    async def close(self) -> None:
        """Stop the worker threads; the proxy processes keep running."""
        self._closed = True
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def _run(self, what: str, fn: Callable[..., T], *args: object) -> T:
        if self._closed:
            # A caller still running while the service stops (an adopter pass) gets an
            # error it handles, not the executor's RuntimeError.
            raise TemporaryProviderError(f"{what}: the local provider is closed (stopping)")
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, fn, *args)
        except ProviderError:
            raise
        except ValueError as exc:  # bad id or credentials: retrying cannot help
            raise PermanentProviderError(f"{what}: {exc}") from None
        except (PermissionError, FileNotFoundError) as exc:
            raise PermanentProviderError(f"{what}: {exc}") from None
        except OSError as exc:  # out of descriptors, disk full, ...: may pass
            raise TemporaryProviderError(f"{what}: {exc}") from None


async def start_unregistered_proxy(
    provider: LocalProvider,
    installation_id: str,
    *,
    proxy_id: str = "",
    zone: str = "local",
) -> tuple[str, Provisioned]:
    """A managed proxy process (folder and marker) that no registry entry knows about: the
    orphan the GC service must find and delete. Made by the adapter's own create()."""
    proxy_id = proxy_id or new_id("orphan-")
    spec = ProxySpec(
        proxy_id=proxy_id,
        installation_id=installation_id,
        zone=zone,
        username="orphan",
        password=secrets.token_hex(16),
    )
    return proxy_id, await provider.create(spec)
