"""Running wrk (the C load generator from apt) with one of our Lua scripts."""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from proxyfleet.bench.wrkparse import WrkResult, parse_wrk

WRK_MISSING = (
    "wrk not found: the API benchmarks need it (`make bench-packages`, or `apt-get install wrk`)"
)


class WrkError(RuntimeError):
    """wrk is missing, or it failed."""


def wrk_binary() -> str:
    found = shutil.which("wrk")
    if not found:
        raise WrkError(WRK_MISSING)
    return found


def script_source(name: str) -> str:
    """A script of the package with the shared reporting helpers (_report.lua) in front."""
    folder = resources.files("proxyfleet.bench") / "wrk"
    return (folder / "_report.lua").read_text() + "\n" + (folder / f"{name}.lua").read_text()


@dataclass(frozen=True, slots=True)
class Load:
    """One wrk run: which script, against what, how hard and how long."""

    script: str
    """static or cycle (bench/src/proxyfleet/bench/wrk/<script>.lua)."""
    url: str
    token: str
    seconds: float
    connections: int = 64
    threads: int = 2
    method: str = "GET"
    body: str = ""
    timeout_s: float = 5.0
    """wrk's per-request timeout (a slower reply counts as a timeout error)."""


async def run_wrk(load: Load, work_dir: Path) -> tuple[WrkResult, str]:
    """Run wrk once; returns the parsed result and its raw output."""
    script = work_dir / f"{load.script}.lua"
    if not script.exists():
        script.write_text(script_source(load.script))
    env = {
        **os.environ,
        "PF_TOKEN": load.token,
        "PF_METHOD": load.method,
        "PF_BODY": load.body,
    }
    args = [
        wrk_binary(),
        "--latency",
        f"-t{load.threads}",
        f"-c{load.connections}",
        f"-d{max(1, round(load.seconds))}s",
        f"--timeout={load.timeout_s:g}s",
        "-s",
        str(script),
        load.url,
    ]
    proc = await asyncio.create_subprocess_exec(
        *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await proc.communicate()
    text = out.decode(errors="replace")
    if proc.returncode != 0:
        raise WrkError(f"wrk exited with {proc.returncode}: {err.decode(errors='replace')[-500:]}")
    return parse_wrk(text), text
