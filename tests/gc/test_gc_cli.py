"""The real `proxyfleet-gc` console script, run as a subprocess."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nats.aio.client import Client as NatsClient

from proxyfleet.common.core.ids import new_proxy_id, resource_name
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.models import ManagedResource, Phase, Proxy, ResourceList
from proxyfleet.devstack.servers import free_port
from proxyfleet.gc.main import SERVICE as GC
from proxyfleet.gc.settings import GcSettings

PROVIDER = "local"
ME = "inst-cli"
SCRIPT = str(Path(sys.executable).parent / "proxyfleet-gc")
Answer = Callable[[ResourceList | bytes | None], None]


async def run_gc(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        SCRIPT,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PROXYFLEET_LOG_FORMAT": "json"},
    )
    async with asyncio.timeout(20):
        out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def log_lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def common_args(nats_url: str, redis_url: str, providers_yaml: Path) -> list[str]:
    return [
        "--nats-url",
        nats_url,
        "--redis-url",
        redis_url,
        "--installation-id",
        ME,
        "--providers-config",
        str(providers_yaml),
    ]


def resource(proxy_id: str, age: float) -> ManagedResource:
    return ManagedResource(
        resource_id=resource_name(proxy_id),
        proxy_id=proxy_id,
        installation_id=ME,
        created_at=time.time() - age,
    )


async def test_once_dry_run_logs_the_orphans_and_publishes_nothing(
    nats_url: str,
    redis_url: str,
    providers_yaml: Path,
    registry: ProxyRegistry,
    answer: Answer,
    nc: NatsClient,
) -> None:
    delete_subject = subjects.intent_delete(PROVIDER)
    await nc.jetstream().purge_stream(subjects.INTENT_STREAM, subject=delete_subject)
    orphan, young, live = new_proxy_id(), new_proxy_id(), new_proxy_id()
    now = time.time()
    await registry.create(
        Proxy(
            id=live,
            provider=PROVIDER,
            zone="z1",
            phase=Phase.READY,
            gen=1,
            username="u",
            password="pw",
            created_at=now,
            updated_at=now,
        )
    )
    await registry.installation.mark(ME)  # the test clock's start: before every resource
    answer(
        ResourceList(
            provider=PROVIDER,
            resources=[resource(orphan, 3600), resource(young, 5), resource(live, 3600)],
        )
    )

    code, out, err = await run_gc(
        *common_args(nats_url, redis_url, providers_yaml), "--once", "--dry-run"
    )

    assert code == 0, err
    would = [line for line in log_lines(out) if line["event"] == "gc.would_delete"]
    assert [(w["proxy_id"], w["resource_id"], w["why"]) for w in would] == [
        (orphan, resource_name(orphan), "proxy absent")
    ]
    # Read from the stream itself: an idle ephemeral consumer would be gone after 5 s.
    info = await nc.jetstream().stream_info(subjects.INTENT_STREAM, subjects_filter=delete_subject)
    assert not info.state.subjects  # no delete intent was published


async def test_once_beside_a_running_gc_does_nothing_says_so_and_fails(
    nats_url: str,
    redis_url: str,
    providers_yaml: Path,
    registry: ProxyRegistry,
    answer: Answer,
) -> None:
    """Another replica holds the provider's round lock (a GC deployment running): --once
    leaves that round to it, warns, exits 1; a run that did hold the lock gives it up."""
    await registry.installation.mark(ME)
    answer(ResourceList(provider=PROVIDER, resources=[resource(new_proxy_id(), 3600)]))
    lock = f"gc:{PROVIDER}"
    await registry.locks.acquire([lock], "gc-deployment", 60)
    args = [*common_args(nats_url, redis_url, providers_yaml), "--once", "--dry-run"]

    code, out, _ = await run_gc(*args)

    assert code == 1
    lines = log_lines(out)
    assert not [line for line in lines if line["event"] == "gc.would_delete"]
    [held] = [line for line in lines if line["event"] == "gc.once_held"]
    assert (held["level"], held["providers"], held["holders"]) == (
        "warning",
        [PROVIDER],
        ["gc-deployment"],
    )
    assert await registry.locks.holder(lock) == "gc-deployment"

    await registry.locks.release([lock], "gc-deployment")
    code, out, _ = await run_gc(*args)
    assert code == 0
    assert [line["event"] for line in log_lines(out)].count("gc.would_delete") == 1
    assert await registry.locks.holder(lock) == ""


async def test_without_the_installation_marker_nothing_is_deleted_and_once_fails(
    nats_url: str,
    redis_url: str,
    providers_yaml: Path,
    registry: ProxyRegistry,
    answer: Answer,
) -> None:
    orphans = [new_proxy_id() for _ in range(3)]
    answer(ResourceList(provider=PROVIDER, resources=[resource(p, 3600) for p in orphans]))

    code, out, _ = await run_gc(
        *common_args(nats_url, redis_url, providers_yaml), "--once", "--dry-run"
    )

    assert code == 1
    lines = log_lines(out)
    assert not [line for line in lines if line["event"] == "gc.would_delete"]
    refused = [line for line in lines if line["event"] == "gc.refused"]
    assert [(r["level"], r["reason"], r["would_delete"]) for r in refused] == [
        ("error", "no_marker", 3)
    ]


async def test_a_bad_providers_config_stops_with_a_message(tmp_path: Path) -> None:
    bad = tmp_path / "providers.yaml"
    bad.write_text(
        "providers:\n  - name: local\n    type: local\n    zones: [z1]\n    colour: red\n"
    )

    code, _, err = await run_gc("--providers-config", str(bad), "--once")

    assert code == 2
    assert str(bad) in err
    assert "colour" in err
    assert "Traceback" not in err


async def test_serves_health_and_metrics_and_stops_on_sigterm(
    nats_url: str,
    redis_url: str,
    providers_yaml: Path,
    answer: Answer,
) -> None:
    answer(ResourceList(provider=PROVIDER, resources=[]))
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        SCRIPT,
        *common_args(nats_url, redis_url, providers_yaml),
        "--interval",
        "0.2",
        "--metrics-port",
        str(port),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(15):
            metrics = ""
            while 'proxyfleet_gc_runs_total{result="ok"}' not in metrics:
                metrics = await http_get(port, "/metrics")
            assert "200 OK" in await http_get(port, "/healthz")
            assert "200 OK" in await http_get(port, "/readyz")
            assert "proxyfleet_gc_last_run_timestamp_seconds" in metrics
            proc.send_signal(signal.SIGTERM)
            assert await proc.wait() == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def http_get(port: int, path: str) -> str:
    """One GET; '' while the server is not up yet (after a short pause)."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        await asyncio.sleep(0.05)
        return ""
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    await writer.drain()
    body = await reader.read()
    writer.close()
    await writer.wait_closed()
    return body.decode()


def test_once_gives_up_on_nats_after_10_s_and_a_service_waits() -> None:
    assert GC.connect_timeout(GcSettings(once=True)) == 10.0
    assert GC.connect_timeout(GcSettings()) is None
