"""A probe-able fleet for the health benchmarks: a handful of real Squids with basic auth
(or of real SOCKS5 servers, microsocks, with username/password), and many registered
proxies that share them.

Each Squid gets its own users (bcrypt htpasswd, the format the local provider writes; a
microsocks, one user); each registered proxy carries one of its upstream's usernames and
passwords, so every probe is a real CONNECT (or SOCKS5 CONNECT) with valid credentials
through a real proxy.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import secrets
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from proxyfleet.common.domain.squid import SquidOptions, htpasswd_line, render_squid_conf
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Phase, Proxy, Scheme
from proxyfleet.devstack.servers import free_port, wait_tcp

SQUID = "/usr/sbin/squid"
MICROSOCKS = "microsocks"
SQUID_USER = "proxy"
"""Squid drops to this user when started as root: its folder must be readable by it."""
PROVIDER = "bench"
SEED_CONCURRENCY = 64
"""Registry scripts in flight at once while seeding (one pipelined round trip per chunk)."""


@dataclass(frozen=True, slots=True)
class Credential:
    username: str
    password: str


@dataclass
class SharedSquid:
    """One real upstream process (a Squid, or a microsocks) and the users it accepts."""

    port: int
    folder: Path
    users: list[Credential]
    proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc else 0

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()  # a graceful stop waits shutdown_lifetime; nothing to save
            self.proc.wait(5)
        self.proc = None


@dataclass
class SquidPool:
    squids: list[SharedSquid] = field(default_factory=list)
    scheme: Scheme = Scheme.HTTP
    """What its upstreams speak: http (Squid) or socks5 (microsocks)."""

    def pids(self) -> list[int]:
        return [s.pid for s in self.squids if s.pid]

    def stop(self) -> None:
        for squid in self.squids:
            squid.stop()
            shutil.rmtree(squid.folder, ignore_errors=True)


def _squid_owner() -> tuple[int, int] | None:
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(SQUID_USER)
    except KeyError:
        return None
    return entry.pw_uid, entry.pw_gid


def start_squids(
    base_dir: Path, count: int, users_per_squid: int, connect_ports: list[int]
) -> SquidPool:
    """`count` Squids under base_dir (which the `proxy` user must be able to traverse)."""
    if not Path(SQUID).exists():
        raise RuntimeError(f"{SQUID} not found: the health benchmarks need Squid")
    pool = SquidPool()
    owner = _squid_owner()
    try:
        for i in range(count):
            pool.squids.append(
                _start_squid(base_dir / f"squid{i}", users_per_squid, connect_ports, owner)
            )
        for squid in pool.squids:
            wait_tcp("127.0.0.1", squid.port, timeout=15)
    except BaseException:
        pool.stop()
        raise
    return pool


def _start_squid(
    folder: Path, users: int, connect_ports: list[int], owner: tuple[int, int] | None
) -> SharedSquid:
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    creds = [
        Credential(f"u{secrets.token_hex(6)}", secrets.token_urlsafe(18)) for _ in range(users)
    ]
    (folder / "htpasswd").write_text("".join(htpasswd_line(c.username, c.password) for c in creds))
    conf = render_squid_conf(
        SquidOptions(
            http_port=port,
            htpasswd_path=str(folder / "htpasswd"),
            bind_address="127.0.0.1",
            pid_file=str(folder / "squid.pid"),
            cache_log=str(folder / "cache.log"),
            connect_ports=connect_ports,
            deny_local_destinations=False,  # the target is on 127.0.0.1 too
            deny_private_destinations=False,
        )
    )
    (folder / "squid.conf").write_text(conf)
    folder.chmod(0o750)
    if owner is not None:
        for path in (folder, *folder.iterdir()):
            os.chown(path, *owner)
    log = open(folder / "squid.out", "ab")  # noqa: SIM115  (owned by the child)
    argv = [SQUID, "-N", "-f", str(folder / "squid.conf"), "-n", f"pfbench{port}"]
    proc = subprocess.Popen(argv, stdout=log, stderr=log, cwd=folder, start_new_session=True)
    log.close()
    return SharedSquid(port=port, folder=folder, users=creds, proc=proc)


def start_microsocks(base_dir: Path, count: int) -> SquidPool:
    """`count` microsocks SOCKS5 servers, each with one user (RuntimeError: not installed)."""
    binary = shutil.which(MICROSOCKS)
    if binary is None:
        raise RuntimeError("microsocks not found: the SOCKS5 health benchmark needs it")
    pool = SquidPool(scheme=Scheme.SOCKS5)
    try:
        for i in range(count):
            folder = base_dir / f"microsocks{i}"
            folder.mkdir(parents=True, exist_ok=True)
            port = free_port()
            cred = Credential(f"u{secrets.token_hex(6)}", secrets.token_urlsafe(18))
            argv = [binary, "-i", "127.0.0.1", "-p", str(port)]
            argv += ["-u", cred.username, "-P", cred.password]
            with open(folder / "microsocks.out", "ab") as log:
                proc = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
            pool.squids.append(SharedSquid(port=port, folder=folder, users=[cred], proc=proc))
        for server in pool.squids:
            wait_tcp("127.0.0.1", server.port, timeout=15)
    except BaseException:
        pool.stop()
        raise
    return pool


def fleet_proxies(pool: SquidPool, count: int, prefix: str = "pb") -> list[Proxy]:
    """`count` registry entries spread round-robin over the pool's Squids and users."""
    now = time.time()
    pairs = [(s, c) for s in pool.squids for c in s.users]
    out = []
    for i in range(count):
        squid, cred = pairs[i % len(pairs)]
        out.append(
            Proxy(
                id=f"{prefix}{i:07d}",
                provider=PROVIDER,
                zone="bench-a",
                phase=Phase.PROVISIONING,
                gen=1,
                username=cred.username,
                password=cred.password,
                created_at=now,
                updated_at=now,
                host="127.0.0.1",
                port=squid.port,
                resource_id=f"shared-squid-{squid.port}",
                scheme=pool.scheme,
            )
        )
    return out


async def seed(registry: ProxyRegistry, proxies: list[Proxy], phase: Phase = Phase.READY) -> None:
    """Register the proxies and move them to booting (which schedules their probes), then
    to `phase`; concurrent registry calls, SEED_CONCURRENCY at a time."""
    deadline = time.time() + 3600

    async def one(p: Proxy) -> None:
        await registry.create(p)
        await registry.transition(p.id, Phase.BOOTING, boot_deadline=deadline)
        if phase is Phase.READY:
            await registry.transition(p.id, Phase.READY)

    for i in range(0, len(proxies), SEED_CONCURRENCY):
        await asyncio.gather(*(one(p) for p in proxies[i : i + SEED_CONCURRENCY]))
