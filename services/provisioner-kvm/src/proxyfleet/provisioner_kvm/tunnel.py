"""One SSH connection to one libvirt host, with the host's libvirt socket forwarded to a local
unix socket: nothing but sshd is exposed on the host.

The host key is pinned from the config (never ~/.ssh/known_hosts), the client key comes from
the configured file only (no agent, no ~/.ssh/config, no password). asyncssh errors are
translated here: network trouble is temporary, a wrong host key or refused key is permanent.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import time
from pathlib import Path

import asyncssh

from proxyfleet.common.core.errors import PermanentProviderError, TemporaryProviderError
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.provisioner_kvm.pure.config import KvmHost

log = get_logger("proxyfleet.kvm.tunnel")

_SOCKET_NAME = "libvirt.sock"
_MAX_SOCKET_PATH = 100  # sun_path holds 107 bytes; keep a margin


def split_address(address: str) -> tuple[str, int]:
    """`host`, `host:port`, `[v6]` or `[v6]:port` -> (host, port); the port defaults to 22."""
    if address.startswith("["):
        host, _, rest = address[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") else 22
    if address.count(":") == 1:
        host, port = address.split(":")
        return host, int(port)
    return address, 22


def known_hosts_line(host: str, port: int, host_key: str) -> str:
    """The known_hosts line pinning `host_key` for exactly this host and port."""
    pattern = host if port == 22 else f"[{host}]:{port}"
    return f"{pattern} {host_key.strip()}\n"


class SshTunnel:
    """The libvirt socket of one host, reachable at `local_socket` while the tunnel is open."""

    def __init__(
        self, host: KvmHost, *, connect_timeout: float = 10.0, socket_dir: Path | None = None
    ) -> None:
        self.host = host
        self._connect_timeout = connect_timeout
        self._socket_parent = socket_dir
        self._addr, self._port = split_address(host.ssh_address)
        self._conn: asyncssh.SSHClientConnection | None = None
        self._listener: asyncssh.SSHListener | None = None
        self._dir: Path | None = None
        self._connected_at = 0.0
        self._lock = asyncio.Lock()

    @property
    def local_socket(self) -> str:
        """Path of the local end of the forwarded libvirt socket (valid after `open()`)."""
        if self._dir is None:
            raise RuntimeError(f"host {self.host.name}: the SSH tunnel was never opened")
        return str(self._dir / _SOCKET_NAME)

    @property
    def libvirt_uri(self) -> str:
        """The URI libvirt-python opens to reach the host's daemon through the tunnel."""
        return f"qemu+unix:///system?socket={self.local_socket}"

    @property
    def is_open(self) -> bool:
        """True while the SSH connection is alive and the socket is forwarded."""
        return self._conn is not None and self._listener is not None and not self._conn.is_closed()

    async def open(self) -> str:
        """Connect (again) unless the tunnel is alive; return the local socket path."""
        async with self._lock:
            if self.is_open:
                return self.local_socket
            await self._teardown(reason="reconnect")
            conn = await self._connect()
            sock = self._fresh_socket_path()
            try:
                self._listener = await conn.forward_local_path(sock, self.host.libvirt_socket)
            except (OSError, asyncssh.Error) as exc:
                conn.abort()
                raise self._temporary(f"cannot forward the libvirt socket: {exc}") from None
            self._conn, self._connected_at = conn, time.monotonic()
            return sock

    async def close(self) -> None:
        """Stop forwarding, close the SSH connection and remove the socket directory."""
        async with self._lock:
            await self._teardown(reason="close")
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None

    def _fresh_socket_path(self) -> str:
        """The socket path in the private dir (made 0700 on first use), with no stale file."""
        if self._dir is None:
            parent = self._socket_parent or Path(tempfile.gettempdir())
            if len(str(parent)) + 30 > _MAX_SOCKET_PATH:
                parent = Path("/tmp")  # noqa: S108 - unix socket paths must stay short
            self._dir = Path(tempfile.mkdtemp(prefix="pfkvm-", dir=parent))
        sock = self._dir / _SOCKET_NAME
        sock.unlink(missing_ok=True)  # a listener that died with its connection leaves its file
        return str(sock)

    async def _connect(self) -> asyncssh.SSHClientConnection:
        name = self.host.name
        try:
            client_key = asyncssh.read_private_key(self.host.ssh_key_file)
        except (OSError, asyncssh.KeyImportError) as exc:
            detail = exc.strerror if isinstance(exc, OSError) else "not a usable private key"
            raise PermanentProviderError(
                f"host {name}: ssh_key_file {self.host.ssh_key_file}: {detail}"
            ) from None
        try:
            known = asyncssh.import_known_hosts(
                known_hosts_line(self._addr, self._port, self.host.host_key)
            )
        except (ValueError, asyncssh.KeyImportError):
            raise PermanentProviderError(
                f"host {name}: host_key is not a valid public key ('ssh-ed25519 AAAA...')"
            ) from None
        started = time.monotonic()
        try:
            conn = await asyncssh.connect(
                self._addr,
                self._port,
                username=self.host.ssh_user,
                client_keys=[client_key],
                known_hosts=known,
                agent_path=None,
                config=None,
                password_auth=False,
                kbdint_auth=False,
                gss_auth=False,
                host_based_auth=False,
                preferred_auth="publickey",
                connect_timeout=self._connect_timeout,
                # A host that vanished (or a NAT that dropped the flow) closes the connection
                # within ~90 s, so the next call reconnects instead of hanging on it.
                keepalive_interval=30,
                keepalive_count_max=3,
            )
        except asyncssh.HostKeyNotVerifiable:
            raise PermanentProviderError(
                f"host {name}: ssh {self.host.ssh_address}: the server's host key does not "
                "match the pinned host_key"
            ) from None
        except asyncssh.PermissionDenied:
            raise PermanentProviderError(
                f"host {name}: ssh {self.host.ssh_address}: user {self.host.ssh_user!r} was "
                "refused with the key in ssh_key_file"
            ) from None
        except asyncssh.DisconnectError as exc:
            raise self._temporary(f"disconnected: {exc.reason}") from None
        except TimeoutError:
            raise self._temporary(f"timed out after {self._connect_timeout:g} s") from None
        except OSError as exc:
            raise self._temporary(exc.strerror or str(exc)) from None
        log.info(
            "kvm.ssh_connected",
            host=name,
            address=self.host.ssh_address,
            duration_ms=round((time.monotonic() - started) * 1000, 1),
        )
        return conn

    async def _teardown(self, *, reason: str) -> None:
        listener, conn = self._listener, self._conn
        self._listener, self._conn = None, None
        if listener is not None:
            listener.close()
            with contextlib.suppress(Exception):
                await listener.wait_closed()
        if conn is not None:
            was_open = not conn.is_closed()
            conn.close()
            with contextlib.suppress(Exception):
                await conn.wait_closed()
            log.info(
                "kvm.ssh_disconnected",
                host=self.host.name,
                address=self.host.ssh_address,
                reason=reason if was_open else "connection lost",
                duration_s=round(time.monotonic() - self._connected_at, 1),
            )

    def _temporary(self, what: str) -> TemporaryProviderError:
        return TemporaryProviderError(f"host {self.host.name}: ssh {self.host.ssh_address}: {what}")
