"""The heavy load (issue 25): wrk's grant -> release cycles at 64 connections, bounded by
wrk's own duration, with every request and every 2xx lease recorded by its Lua script
(heavy_cycle.lua, a file per wrk thread, merged here) so the light load's audits run on
it too. wrk stops mid-cycle: the leases it still held are released here, recorded."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from tests.faults.audit import Finding, Lease, Request
from tests.faults.harness import auth

from proxyfleet.bench.wrkrun import WrkError, wrk_binary

SCRIPT = Path(__file__).with_name("heavy_cycle.lua")
RELEASE_FOR = 20.0
"""Seconds wrk (and the clean-up here) keep sending one lease's refused release."""


@dataclass
class Records:
    """What the wrk threads wrote, merged."""

    requests: list[Request] = field(default_factory=list)
    leases: list[Lease] = field(default_factory=list)
    bare_503: Counter[str] = field(default_factory=Counter)
    """503 answers without Retry-After, by operation."""


def parse_records(lines: Iterable[str]) -> Records:
    """Merge the threads' R (request), G (grant) and X (settled release) lines, and the S
    lines (a release sent, unanswered when wrk stopped). A lease with no X was still held
    when wrk stopped: release_status None, release_sent its S or None."""
    out = Records()
    grants: dict[str, list[str]] = {}
    ends: dict[str, tuple[float | None, int | None]] = {}
    for line in lines:
        f = line.rstrip("\n").split("\t")
        if f[0] == "R" and len(f) == 7:
            status = int(f[4])
            out.requests.append(Request(f[1], float(f[2]), float(f[3]), status, f[5]))
            if status == 503 and f[6] != "1":
                out.bare_503[f[1]] += 1
        elif f[0] == "G" and len(f) == 6:
            grants[f[1]] = f
        elif f[0] == "X" and len(f) == 4:
            ends[f[1]] = (float(f[2]), int(f[3]))
        elif f[0] == "S" and len(f) == 3:
            ends.setdefault(f[1], (float(f[2]), None))
    for lease_id, g in grants.items():
        sent, settled = ends.get(lease_id, (None, None))
        out.leases.append(Lease(lease_id, g[2], int(g[3]), float(g[4]), float(g[5]), sent, settled))
    return out


def check_retry_after(bare_503: Counter[str]) -> list[Finding]:
    """An outage is a 503 *with* Retry-After (the light load cannot see the header)."""
    return [Finding("no_retry_after", f"{op} 503 x{n}") for op, n in sorted(bare_503.items())]


@dataclass
class HeavyLoad:
    url: str
    token: str
    seconds: int
    work_dir: Path
    connections: int = 64
    """Also wrk's threads: one connection each, so each answer is matched to its request."""
    ttl: int = 10
    record: bool = True
    """False: record nothing (what recording costs is the difference in requests/s)."""
    records: Records = field(default_factory=Records)
    wrk_rps: float = 0.0
    """wrk's own Requests/sec over the whole run."""
    started: float = 0.0
    ended: float = 0.0
    _proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> HeavyLoad:
        self.start()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            self.finish()
        elif self._proc is not None and self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait(10)

    @property
    def folder(self) -> Path:
        return self.work_dir / f"heavy-{int(self.started * 1000)}"

    def start(self) -> None:
        self.started = time.time()
        self.folder.mkdir(parents=True)
        env = {
            **os.environ,
            "PF_TOKEN": self.token,
            "PF_RECORD_DIR": str(self.folder) if self.record else "",
            "PF_TTL": str(self.ttl),
            "PF_RELEASE_FOR": str(RELEASE_FOR),
        }
        n = self.connections
        args = [wrk_binary(), f"-t{n}", f"-c{n}", f"-d{self.seconds}s", "--timeout=10s"]
        self._proc = subprocess.Popen(
            [*args, "-s", str(SCRIPT), self.url],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )

    def finish(self) -> None:
        """Wait for wrk's end (its -d), merge the records, release what it still held."""
        assert self._proc is not None
        out, err = self._proc.communicate(timeout=self.seconds + 30)
        self.ended = time.time()
        if self._proc.returncode != 0:
            raise WrkError(f"wrk exited with {self._proc.returncode}: {err.decode()[-500:]}")
        found = re.search(rb"Requests/sec:\s+([\d.]+)", out)
        self.wrk_rps = float(found.group(1)) if found else 0.0
        files = sorted(self.folder.glob("*.tsv"))  # thread-<n>.tsv, held.tsv
        self.records = parse_records(ln for p in files for ln in p.read_text().splitlines())
        self._release_held()

    def _release_held(self) -> None:
        with httpx.Client(base_url=self.url, headers=auth(self.token), timeout=5) as http:
            for i, lease in enumerate(self.records.leases):
                if lease.release_status is None:
                    self.records.leases[i] = self._release(http, lease)

    def _release(self, http: httpx.Client, lease: Lease) -> Lease:
        """Release a lease wrk still held; its owner let go when wrk sent a release (then
        unanswered), else now."""
        first = time.time()
        sent, status = first, 0
        while time.time() - first < RELEASE_FOR:
            sent = time.time()
            try:
                r = http.post(f"/v1/leases/{lease.lease_id}/release", json={"epoch": lease.epoch})
                status = r.status_code
            except httpx.HTTPError:
                status = 0
            self.records.requests.append(Request("release", sent, time.time() - sent, status))
            if status in (200, 404, 409):
                break
            time.sleep(0.2)
        return Lease(
            lease.lease_id, lease.proxy_id, lease.epoch, lease.granted_at, lease.expires_at,
            lease.release_sent or sent, status,
        )  # fmt: skip


def sample_leases(leases: list[Lease], limit: int) -> list[Lease]:
    """At most `limit` leases whose state to read back (one GET each): every lease whose
    release was not a plain 200 first, then the others evenly spaced in time."""
    odd = [x for x in leases if x.release_status != 200][:limit]
    rest = sorted((x for x in leases if x.release_status == 200), key=lambda x: x.granted_at)
    room = min(limit - len(odd), len(rest))
    return odd + [rest[i * len(rest) // room] for i in range(max(room, 0))]
