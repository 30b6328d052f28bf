"""Facts about the machine a run measured (for docs/performance.md)."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

from proxyfleet.devstack.servers import nats_server_binary, redis_server_binary


def _first_line(args: list[str]) -> str:
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unavailable ({exc})"
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else "unknown"


def _proc_value(path: str, key: str) -> str:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def _version(module: str) -> str:
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        return version(module)
    except PackageNotFoundError:
        return "not installed"


def machine_facts() -> dict[str, str]:
    mem_kb = _proc_value("/proc/meminfo", "MemTotal").split()[0]
    try:
        mem = f"{int(mem_kb) / 1024 / 1024:.1f} GiB"
    except ValueError:
        mem = "unknown"
    return {
        "cores (nproc)": str(len(os.sched_getaffinity(0))),
        "CPU": _proc_value("/proc/cpuinfo", "model name"),
        "memory": mem,
        "kernel": platform.release(),
        "Python": platform.python_version(),
        "Redis": _first_line([redis_server_binary(), "--version"]),
        "NATS": _first_line([nats_server_binary(), "--version"]),
        "wrk": _first_line(["wrk", "--version"]),
        "API server": (
            f"uvicorn {_version('uvicorn')}, uvloop {_version('uvloop')}, "
            f"httptools {_version('httptools')}, one worker"
        ),
        "redis-py / hiredis": f"{_version('redis')} / {_version('hiredis')}",
        "Litestar": _version("litestar"),
    }
