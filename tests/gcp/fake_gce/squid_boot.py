"""Boots an instance for real: its user-data's files in a folder of its own and a Squid
started from them on a loopback address of its own (I/O: files, sockets, processes).

Squid run as root drops to user `proxy`, so the folders live outside pytest's private tmp
tree (under a 0755 one of our own) and are handed to that user, as tests/health does.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import pwd
import random
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .cloud_config import CloudConfigError, plan_boot

log = logging.getLogger(__name__)

SQUID_CANDIDATES = ("/usr/sbin/squid", "/usr/local/sbin/squid")


def find_squid() -> str | None:
    found = shutil.which("squid")
    return found or next((p for p in SQUID_CANDIDATES if os.access(p, os.X_OK)), None)


class BootError(Exception):
    """The instance runs but its proxy did not come up; the message says why."""


@dataclass
class Booted:
    address: str
    port: int
    directory: Path
    argv: list[str]
    proc: subprocess.Popen[bytes] | None = None
    timer: threading.Timer | None = None


class SquidBooter:
    """Starts and stops the Squids of one fake; `stop_all` is the teardown."""

    def __init__(self, *, boot_timeout: float = 15.0, allow_local_destinations: bool = True):
        self.squid = find_squid()
        self.boot_timeout = boot_timeout
        self.allow_local_destinations = allow_local_destinations
        self.root = Path(tempfile.mkdtemp(prefix="pf-fakegce-"))
        self.root.chmod(0o755)
        self._lock = threading.Lock()
        self._booted: dict[str, Booted] = {}
        self._taken: set[str] = set()
        # A random /16 of 127/8 per fake: two fakes on one machine rarely share an address,
        # and the bind probe in `_allocate` settles the rare case.
        self._addresses = _addresses(random.randrange(1, 255))
        self._serial = itertools.count(1)

    def boot(self, key: str, user_data: str, delay: float = 0.0) -> Booted:
        """Squid listening on the instance's address; with `delay`, the address at once and
        Squid that much later (a guest still running cloud-init), errors only logged."""
        if self.squid is None:
            raise BootError("squid is not installed: the fake cannot boot proxies")
        directory = self.root / f"{key.split('#', maxsplit=1)[0]}-{next(self._serial)}"
        directory.mkdir(mode=0o755)
        try:
            # Planned twice: the address is chosen by the port the config asks for.
            port = plan_boot(user_data, str(directory), "0.0.0.0").port
            address = self._allocate(port)
            plan = plan_boot(
                user_data,
                str(directory),
                address,
                allow_local_destinations=self.allow_local_destinations,
            )
        except CloudConfigError as exc:
            shutil.rmtree(directory, ignore_errors=True)
            raise BootError(str(exc)) from exc
        for name, f in plan.files.items():
            (directory / name).write_text(f.content)
            (directory / name).chmod(f.permissions)
        (directory / "squid.conf").write_text(plan.squid_conf)
        _hand_to_proxy_user(directory)
        service = f"pfgce{os.getpid()}x{directory.name.rsplit('-', 1)[-1]}"
        argv = [self.squid, "-N", "-f", str(directory / "squid.conf"), "-n", service]
        booted = Booted(address, plan.port, directory, argv)
        with self._lock:
            self._booted[key] = booted
        if delay > 0:
            booted.timer = threading.Timer(delay, self._start_logged, (key, booted))
            booted.timer.daemon = True
            booted.timer.start()
            return booted
        self._start(key, booted)
        return booted

    def stop(self, key: str) -> None:
        with self._lock:
            booted = self._booted.pop(key, None)
            if booted is not None:
                self._taken.discard(booted.address)
        if booted is None:
            return
        if booted.timer is not None:
            booted.timer.cancel()
        # Gone at once, like a VM switched off: a graceful Squid stop takes seconds.
        if booted.proc is not None:
            if booted.proc.poll() is None:
                booted.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                booted.proc.wait(5)
        shutil.rmtree(booted.directory, ignore_errors=True)

    def running(self) -> dict[str, int]:
        """Instance key → pid of each Squid still running."""
        with self._lock:
            return {
                k: b.proc.pid
                for k, b in self._booted.items()
                if b.proc is not None and b.proc.poll() is None
            }

    def stop_all(self) -> None:
        with self._lock:
            keys = list(self._booted)
        for key in keys:
            self.stop(key)
        shutil.rmtree(self.root, ignore_errors=True)

    def _start(self, key: str, booted: Booted) -> None:
        with self._lock:
            if self._booted.get(key) is not booted:
                return  # stopped before it started
            with open(booted.directory / "squid.out", "ab") as log:
                booted.proc = subprocess.Popen(
                    booted.argv, stdout=log, stderr=log, cwd=booted.directory
                )
        self._wait_listening(key, booted)

    def _start_logged(self, key: str, booted: Booted) -> None:
        try:
            self._start(key, booted)
        except BootError as exc:
            log.warning("fake GCE: %s did not boot a proxy: %s", key, exc)

    def _allocate(self, port: int) -> str:
        with self._lock:
            for address in self._addresses:
                if address in self._taken or not _bindable(address, port):
                    continue
                self._taken.add(address)
                return address
        raise BootError("no free loopback address left")

    def _wait_listening(self, key: str, booted: Booted) -> None:
        assert booted.proc is not None
        deadline = time.monotonic() + self.boot_timeout
        while time.monotonic() < deadline:
            if booted.proc.poll() is not None:
                why = _tail(booted.directory / "cache.log") or _tail(booted.directory / "squid.out")
                self.stop(key)
                raise BootError(f"squid exited with {booted.proc.returncode}: {why}")
            with contextlib.suppress(OSError):
                socket.create_connection((booted.address, booted.port), timeout=0.5).close()
                return
            time.sleep(0.05)
        self.stop(key)
        raise BootError(f"squid did not listen on {booted.address}:{booted.port} in time")


def _addresses(second: int) -> list[str]:
    return [f"127.{second}.{c}.{d}" for c in range(256) for d in range(1, 255)]


def _bindable(address: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((address, port))
        except OSError:
            return False
    return True


def _hand_to_proxy_user(directory: Path) -> None:
    if os.geteuid() != 0:
        return
    try:
        user = pwd.getpwnam("proxy")
    except KeyError:
        return
    for path in (directory, *directory.iterdir()):
        os.chown(path, user.pw_uid, user.pw_gid)


def _tail(path: Path, lines: int = 5) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
