"""Loopback addresses, folders and processes for real Squids (I/O: sockets, files,
processes).

Squid run as root drops to user `proxy`, so proxy folders live outside pytest's private
tmp tree (under a 0755 one of our own) and are handed to that user, as tests/health does.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import random
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

SQUID_CANDIDATES = ("/usr/sbin/squid", "/usr/local/sbin/squid")


def find_squid() -> str | None:
    found = shutil.which("squid")
    return found or next((p for p in SQUID_CANDIDATES if os.access(p, os.X_OK)), None)


class NoAddressLeft(Exception):
    """Every loopback address of the pool is taken."""


class LoopbackAddresses:
    """Addresses of a random /16 of 127/8, one per proxy: two fakes on one machine rarely
    share one, and the bind probe in `allocate` settles the rare case. Handed out round
    robin, as a cluster's IPAM does, so a released address is not at once someone else's."""

    def __init__(self, second_octet: int | None = None, *, reserved_third: int = 255) -> None:
        self.second = second_octet if second_octet is not None else random.randrange(1, 255)
        self._lock = threading.Lock()
        self._taken: set[str] = set()
        self._next = 0
        self._candidates = [
            f"127.{self.second}.{c}.{d}"
            for c in range(256)
            if c != reserved_third
            for d in range(1, 255)
        ]
        self.reserved_prefix = f"127.{self.second}.{reserved_third}."
        """Third octet left out of the pool: addresses a fake hands out that nothing
        listens on (a fake Kubernetes' ClusterIPs)."""

    def allocate(self, port: int) -> str:
        """A free address on which `port` can be bound right now."""
        with self._lock:
            count = len(self._candidates)
            for step in range(count):
                i = (self._next + step) % count
                address = self._candidates[i]
                if address in self._taken or not bindable(address, port):
                    continue
                self._taken.add(address)
                self._next = i + 1
                return address
        raise NoAddressLeft("no free loopback address left")

    def release(self, address: str) -> None:
        with self._lock:
            self._taken.discard(address)


def bindable(address: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((address, port))
        except OSError:
            return False
    return True


def make_root(prefix: str) -> Path:
    """A 0755 folder of our own under the system tmp dir (Squid's user must traverse it)."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    root.chmod(0o755)
    return root


def hand_to_proxy_user(directory: Path, *, recursive: bool = False) -> None:
    """Give `directory` and what is in it to user `proxy` when we run as root (Squid drops
    to that user and must write its pid, logs and cache there)."""
    if os.geteuid() != 0:
        return
    try:
        user = pwd.getpwnam("proxy")
    except KeyError:
        return
    paths = directory.rglob("*") if recursive else directory.iterdir()
    for path in (directory, *paths):
        os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)


def start_squid(argv: list[str], directory: Path) -> subprocess.Popen[bytes]:
    """Squid started in `directory`, its stdout and stderr appended to squid.out there."""
    with open(directory / "squid.out", "ab") as out:
        return subprocess.Popen(argv, stdout=out, stderr=out, cwd=directory)


def accepts(address: str, port: int, timeout: float = 0.5) -> bool:
    with contextlib.suppress(OSError):
        socket.create_connection((address, port), timeout=timeout).close()
        return True
    return False


def wait_listening(
    proc: subprocess.Popen[bytes], address: str, port: int, timeout: float
) -> str | None:
    """None once `address:port` accepts; otherwise why not (exited, or not in time)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return f"squid exited with {proc.returncode}"
        if accepts(address, port):
            return None
        time.sleep(0.05)
    return f"squid did not listen on {address}:{port} in {timeout:g} s"


def kill(proc: subprocess.Popen[bytes] | None) -> None:
    """Gone at once, like a VM switched off: a graceful Squid stop takes seconds."""
    if proc is None:
        return
    if proc.poll() is None:
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5)


def tail(path: Path, lines: int = 5) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
