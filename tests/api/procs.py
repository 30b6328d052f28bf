"""Running the real `proxyfleet-api` console script as a subprocess."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from proxyfleet.devstack.servers import free_port

API_BIN = str(Path(sys.executable).parent / "proxyfleet-api")


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the CLI to completion (for the cases where it must refuse to start)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PROXYFLEET_")}
    return subprocess.run(
        [API_BIN, *args],
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@contextmanager
def api_process(args: list[str], env: dict[str, str], log: Path) -> Iterator[str]:
    """Start the API on a free port; yields its base URL; stops it on exit."""
    with api_process_handle(args, env, log) as (url, _):
        yield url


@contextmanager
def api_process_handle(
    args: list[str], env: dict[str, str], log: Path
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """api_process, yielding the process too (to signal it)."""
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PROXYFLEET_")}
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [API_BIN, "--host", "127.0.0.1", "--port", str(port), *args],
            env={**clean, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            yield f"http://127.0.0.1:{port}", proc
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


async def wait_ready(url: str, log: Path, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    async with httpx.AsyncClient(base_url=url, timeout=2) as client:
        while time.monotonic() < deadline:
            try:
                if (await client.get("/readyz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    text = await asyncio.to_thread(log.read_text)
    raise TimeoutError(f"{url} not ready in {within}s; log:\n{text[-3000:]}")
