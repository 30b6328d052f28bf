"""One libvirt host: its connector (an SSH tunnel in production), its libvirt connection,
reused across calls and re-established after a drop, and its traced call runner."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import libvirt

from proxyfleet.common.core.errors import ProviderError, TemporaryProviderError
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.runner.failures import Kind, failure_kind
from proxyfleet.provisioner_kvm.libvirt_calls import LibvirtCalls
from proxyfleet.provisioner_kvm.metrics import SSH_CONNECTS
from proxyfleet.provisioner_kvm.pure.config import KvmHost
from proxyfleet.provisioner_kvm.tunnel import SshTunnel

T = TypeVar("T")
log = get_logger("proxyfleet.kvm.host")


class Connector(Protocol):
    """Makes a host's libvirt reachable and says by which URI."""

    @property
    def is_open(self) -> bool: ...

    async def open(self) -> str:
        """Connect if needed; return the libvirt URI to open. Raises provider errors."""
        ...

    async def close(self) -> None: ...


class SshConnector:
    """Production: the host's libvirt socket forwarded through one SSH connection."""

    def __init__(self, host: KvmHost) -> None:
        self._tunnel = SshTunnel(host)

    @property
    def is_open(self) -> bool:
        return self._tunnel.is_open

    async def open(self) -> str:
        await self._tunnel.open()
        return self._tunnel.libvirt_uri

    async def close(self) -> None:
        await self._tunnel.close()


class DirectConnector:
    """A libvirt URI opened as is: the built-in test driver, or a hypervisor on this machine."""

    def __init__(self, uri: str) -> None:
        self._uri = uri

    @property
    def is_open(self) -> bool:
        return True

    async def open(self) -> str:
        return self._uri

    async def close(self) -> None:
        return None


class HostSession:
    """Runs libvirt calls against one host on one reused connection."""

    def __init__(self, host: KvmHost, connector: Connector, *, trace_full: bool = False) -> None:
        self.host = host
        self.calls = LibvirtCalls(host.name, trace_full=trace_full)
        self._connector = connector
        self._conn: libvirt.virConnect | None = None
        self._lock = asyncio.Lock()
        self._volume_locks: dict[str, asyncio.Lock] = {}

    def volume_lock(self, volume: str) -> asyncio.Lock:
        """Serialises work on one volume of this host within this process (two creates
        that both miss the image cache must not upload, or delete, the same base image);
        across replicas, `coordination.UploadLocks` does."""
        return self._volume_locks.setdefault(volume, asyncio.Lock())

    async def run(self, call: str, fn: Callable[[libvirt.virConnect], T], **ids: Any) -> T:
        """`fn(conn)` in a worker thread, traced as `call`. A dropped connection is
        re-established on the next call; this one fails as a temporary error."""
        conn = await self._connection()
        try:
            return await self.calls.run(call, lambda: fn(conn), **ids)
        except ProviderError as exc:
            if failure_kind(exc) is Kind.DISCONNECTED:
                await self._drop(conn)
            raise

    async def _connection(self) -> libvirt.virConnect:
        async with self._lock:
            if self._conn is not None and self._connector.is_open:
                return self._conn
            if self._conn is not None:
                log.warning("libvirt.connection_lost", host=self.host.name)
                await self._close_conn()
            try:
                uri = await self._connector.open()
                self._conn = await self.calls.run("open", lambda: libvirt.open(uri))
            except ProviderError as exc:
                SSH_CONNECTS.labels(self.host.name, "error").inc()
                if failure_kind(exc) is Kind.DISCONNECTED:
                    raise TemporaryProviderError(
                        f"host {self.host.name} (zone {self.host.zone}) unreachable: {exc}"
                    ) from None
                raise
            SSH_CONNECTS.labels(self.host.name, "ok").inc()
            log.info("libvirt.connected", host=self.host.name, zone=self.host.zone)
            return self._conn

    async def _drop(self, conn: libvirt.virConnect) -> None:
        async with self._lock:
            if self._conn is conn:
                await self._close_conn()

    async def _close_conn(self) -> None:
        """Close the connector (the SSH tunnel), then the libvirt connection. In that
        order: the connection's last reference may be dropped later on any thread (a
        volume or pool freed by a garbage collection), and its close then talks to the
        far end; through a tunnel that this process's event loop serves, on the loop's
        own thread, that would wait forever (the main thread was seen hung in
        virStoragePoolFree). A closed tunnel fails that at once instead."""
        conn, self._conn = self._conn, None
        with contextlib.suppress(Exception):
            await self._connector.close()
        if conn is not None:
            with contextlib.suppress(Exception):
                await self.calls.run("close", functools.partial(_collect_then_close, conn))

    async def close(self) -> None:
        async with self._lock:
            await self._close_conn()
        self.calls.close()


def _collect_then_close(conn: libvirt.virConnect) -> int:
    """Close `conn` after a garbage collection on this (the libvirt) thread: pools and
    volumes caught in reference cycles hold the connection, and are best freed here."""
    gc.collect()
    return int(conn.close())
