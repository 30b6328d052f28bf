"""The real API process stops on SIGTERM after whoever read its output is gone: the dev
launcher, SIGKILLed, leaves its services a stdout pipe with no reader before their
SIGTERM (setpriv's) arrives. Every log line then fails with EPIPE; the first one, in the
signal handler, used to keep the stop from being set at all (SH7 in
docs/decisions/service-host.md)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from tests.api.helpers import PROVIDERS_YAML
from tests.api.procs import API_BIN, wait_ready

from proxyfleet.devstack.servers import free_port


async def test_sigterm_stops_the_api_once_its_stdout_pipe_has_no_reader(
    tmp_path: Path, redis_url: str, nats_url: str
) -> None:
    cfg = tmp_path / "providers.yaml"
    cfg.write_text(PROVIDERS_YAML)
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PROXYFLEET_")}
    read_end, write_end = os.pipe()  # start-up writes a few lines: far below a pipe's 64 KiB
    args = ["--host", "127.0.0.1", "--port", str(port), "--redis-url", redis_url]
    args += ["--nats-url", nats_url, "--providers-config", str(cfg)]
    proc = await asyncio.create_subprocess_exec(
        API_BIN,
        *args,
        env={**clean, "PROXYFLEET_CLIENT_TOKENS": "cli1:cli-1-secret-for-tests"},
        stdout=write_end,
        stderr=write_end,
    )
    os.close(write_end)
    try:
        await wait_ready(f"http://127.0.0.1:{port}", tmp_path / "unread.log")
        os.close(read_end)  # the reader is gone, as a SIGKILLed launcher's is
        proc.terminate()
        async with asyncio.timeout(15):
            assert await proc.wait() == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
