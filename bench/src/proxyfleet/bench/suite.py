"""A benchmark run: scratch dir, its own NATS and Redis, every module, one table, the doc."""

from __future__ import annotations

import asyncio
import importlib
import shutil
import tempfile
import traceback
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from proxyfleet.bench.doc import render
from proxyfleet.bench.env import BenchEnv
from proxyfleet.bench.figures import Figure
from proxyfleet.bench.machine import machine_facts
from proxyfleet.bench.plot import plot_latency
from proxyfleet.bench.report import text_table
from proxyfleet.devstack.servers import start_nats, start_redis

MODULES: dict[str, str] = {
    "api": "proxyfleet.bench.api_bench",
    "redis": "proxyfleet.bench.redis_memory",
    "egress": "proxyfleet.bench.egress_bench",
    "replica-wait": "proxyfleet.bench.replica_wait_bench",
    "health": "proxyfleet.bench.health_bench",
    "lifecycle": "proxyfleet.bench.lifecycle_bench",
    "gateway": "proxyfleet.bench.gateway_bench",
    "gateway-upstreams": "proxyfleet.bench.gateway_upstreams_bench",
    "pools": "proxyfleet.bench.pools_bench",
    "redis-ceiling": "proxyfleet.bench.redis_ceiling",
}
"""Benchmark modules in run order; each has `async def run(env: BenchEnv) -> list[Figure]`."""

PLOT_FILE = "performance-latency.png"

Runner = Callable[[BenchEnv], Awaitable[list[Figure]]]
Echo = Callable[[str], None]


@dataclass
class Outcome:
    figures: list[Figure] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    """'<module>: <error>' for each module that was missing or raised."""


def make_scratch_dir() -> Path:
    """A fresh folder under /tmp that Squid's `proxy` user can traverse (0711)."""
    path = Path(tempfile.mkdtemp(prefix="proxyfleet-bench-", dir="/tmp"))
    path.chmod(0o711)
    return path


def load_runner(module: str) -> Runner:
    return cast(Runner, importlib.import_module(module).run)


async def run_modules(env: BenchEnv, names: Sequence[str], echo: Echo) -> Outcome:
    """Run each module in turn; a missing or failing module is reported and skipped."""
    outcome = Outcome()
    for name in names:
        echo(f"== {name}: running ({MODULES[name]})")
        try:
            figures = await load_runner(MODULES[name])(env)
        except Exception as exc:
            echo(f"== {name}: FAILED: {exc!r}")
            echo("".join(traceback.format_exception(exc)).rstrip())
            outcome.failures.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        echo(f"== {name}: {len(figures)} figures")
        outcome.figures.extend(figures)
    return outcome


def selected(only: Sequence[str]) -> list[str]:
    unknown = [n for n in only if n not in MODULES]
    if unknown:
        raise ValueError(f"unknown benchmark {', '.join(unknown)}: pick from {', '.join(MODULES)}")
    return [n for n in MODULES if not only or n in only]


async def run_all(names: Sequence[str], *, quick: bool, base: Path, echo: Echo = print) -> Outcome:
    (base / "logs").mkdir(exist_ok=True)
    nats = start_nats(base / "nats", base / "logs" / "nats.log")
    try:
        redis = start_redis(base / "redis", base / "logs" / "redis.log")
        try:
            env = BenchEnv(
                base_dir=base,
                nats_url=nats.url,
                redis_url=redis.url,
                quick=quick,
                nats_pid=nats.process.pid,
                redis_pid=redis.process.pid,
            )
            return await run_modules(env, names, echo)
        finally:
            redis.stop()
    finally:
        nats.stop()


def write_doc(outcome: Outcome, docs_dir: Path, command: str) -> Path:
    docs_dir.mkdir(parents=True, exist_ok=True)
    plotted = plot_latency(
        outcome.figures, docs_dir / PLOT_FILE, "Latency at 64 connections, one API worker"
    )
    text = render(
        outcome.figures,
        machine_facts(),
        plot_file=PLOT_FILE if plotted else None,
        failures=outcome.failures,
        command=command,
    )
    path = docs_dir / "performance.md"
    path.write_text(text)
    return path


def not_measured(outcome: Outcome) -> list[str]:
    """What the run could not measure: failed modules, then rows marked missing."""
    return [f"not measured: {line}" for line in outcome.failures] + [
        f"not measured: {f.what}: {f.missing}" for f in outcome.figures if f.missing
    ]


def main_run(
    only: Sequence[str], *, quick: bool, docs_dir: Path | None, keep: bool, echo: Echo = print
) -> Outcome:
    names = selected(only)
    base = make_scratch_dir()
    echo(f"scratch dir: {base}")
    try:
        outcome = asyncio.run(run_all(names, quick=quick, base=base, echo=echo))
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)
    echo("")
    echo(text_table(outcome.figures))
    for line in not_measured(outcome):
        echo(line)
    if docs_dir is not None:
        command = "proxyfleet-bench run" + (" --quick" if quick else "")
        echo(f"wrote {write_doc(outcome, docs_dir, command)}")
    return outcome
