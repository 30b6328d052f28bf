"""Boots an instance for real: its user-data's files in a folder of its own and a Squid
started from them on a loopback address of its own (I/O: files, sockets, processes).

Squid run as root drops to user `proxy`, so the folders live outside pytest's private tmp
tree (under a 0755 one of our own) and are handed to that user, as tests/health does.
"""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from tests.loopback_squid.host import (
    LoopbackAddresses,
    NoAddressLeft,
    find_squid,
    hand_to_proxy_user,
    kill,
    make_root,
    start_squid,
    tail,
    wait_listening,
)

from .cloud_config import CloudConfigError, plan_boot

log = logging.getLogger(__name__)

__all__ = ["BootError", "Booted", "SquidBooter", "find_squid"]


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
        self.root = make_root("pf-fakegce-")
        self._lock = threading.Lock()
        self._booted: dict[str, Booted] = {}
        self._addresses = LoopbackAddresses()
        self._serial = itertools.count(1)

    @property
    def unassigned_address(self) -> str:
        """An address of this fake's range that no instance is ever given (a fixed one
        could be an instance's, when the range happens to include it)."""
        return f"{self._addresses.reserved_prefix}1"

    def boot(
        self, key: str, user_data: str, delay: float = 0.0, *, egress: str | None = None
    ) -> Booted:
        """Squid listening on the instance's address; with `delay`, the address at once and
        Squid that much later (a guest still running cloud-init), errors only logged.
        `egress`: the address it leaves from (None: its own, as with an external IP)."""
        if self.squid is None:
            raise BootError("squid is not installed: the fake cannot boot proxies")
        directory = self.root / f"{key.split('#', maxsplit=1)[0]}-{next(self._serial)}"
        directory.mkdir(mode=0o755)
        try:
            # Planned twice: the address is chosen by the port the config asks for.
            port = plan_boot(user_data, str(directory), "0.0.0.0").port
            address = self._addresses.allocate(port)
        except (CloudConfigError, NoAddressLeft) as exc:
            shutil.rmtree(directory, ignore_errors=True)
            raise BootError(str(exc)) from exc
        plan = plan_boot(
            user_data,
            str(directory),
            address,
            allow_local_destinations=self.allow_local_destinations,
            egress=address if egress is None else egress,
        )
        for name, f in plan.files.items():
            (directory / name).write_text(f.content)
            (directory / name).chmod(f.permissions)
        (directory / "squid.conf").write_text(plan.squid_conf)
        hand_to_proxy_user(directory)
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
        if booted is None:
            return
        self._addresses.release(booted.address)
        if booted.timer is not None:
            booted.timer.cancel()
        kill(booted.proc)
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
            booted.proc = start_squid(booted.argv, booted.directory)
        self._wait_listening(key, booted)

    def _start_logged(self, key: str, booted: Booted) -> None:
        try:
            self._start(key, booted)
        except BootError as exc:
            log.warning("fake GCE: %s did not boot a proxy: %s", key, exc)

    def _wait_listening(self, key: str, booted: Booted) -> None:
        assert booted.proc is not None
        why = wait_listening(booted.proc, booted.address, booted.port, self.boot_timeout)
        if why is None:
            return
        detail = tail(booted.directory / "cache.log") or tail(booted.directory / "squid.out")
        self.stop(key)
        raise BootError(f"{why}: {detail}")
