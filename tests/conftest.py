"""Session fixtures shared by every test folder: a fresh real NATS (JetStream) and Redis on
free ports (or the servers named by TEST_NATS_URL / TEST_REDIS_URL), clients on them, the
clock, the registry and the loopback HTTPS `target` test proxies reach. A folder's conftest
adds only what is its own; one that needs real time overrides `clock` (the registry
follows it).

Markers are set here from what a test uses (see `pytest_collection_modifyitems`), so
`-m "pure or store"` (`make test-fast`) selects the tests that need at most Redis."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis.asyncio as aioredis
import stamina
from nats.aio.client import Client as NatsClient

from proxyfleet.common.core.clock import Clock, ManualClock
from proxyfleet.common.messaging.jetstream import connect_nats, ensure_streams
from proxyfleet.common.store import ProxyRegistry, connect_redis
from proxyfleet.devstack.servers import start_nats, start_redis

# The provider contract's asserts are in a plain module its subclasses import.
pytest.register_assert_rewrite("tests.contract.provider_contract")

# Real SOCKS5, TLS and vendor-gateway upstreams on loopback (tests/upstreams/__init__.py).
pytest_plugins = ["tests.upstreams.fixtures"]

# A suite started in the background of a non-interactive shell (`./.ci/run &`, nohup)
# inherits SIGINT ignored, and so would every process it starts: the tests that press
# Ctrl-C on the CLI (and on the commands it runs) need the default disposition there. A
# handler here is reset to the default in each child at exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# ---- markers ------------------------------------------------------------------------------

SLOW_MODULES = {
    # Tests that start processes, servers or VMs of their own, without a server fixture.
    "tests/api/test_api_cli.py",
    "tests/api/test_api_footprint.py",
    "tests/gateway/test_gateway_settings.py",
    "tests/bench/test_health_fleet.py",
    "tests/bench/test_proxy_chain.py",
    "tests/client/test_client_generated.py",
    "tests/common/test_host_cli.py",
    "tests/common/test_host_http.py",
    "tests/deploy/test_dashboard.py",
    "tests/deploy/test_manifests.py",
    "tests/deploy/test_manifests_gcp.py",
    "tests/deploy/test_manifests_k8s.py",
    "tests/deploy/test_manifests_pool_operator.py",
    "tests/deploy/test_samples.py",
    "tests/deploy/test_overlays_structure.py",
    "tests/deploy/test_overlays_validate.py",
    "tests/gc/test_gc_cli.py",
    "tests/health/test_main.py",
    "tests/health/test_target.py",
    "tests/health/test_tls.py",
    "tests/k8s/integration/test_gate.py",
    "tests/kvm/test_image_store.py",
    "tests/pool_operator/test_service.py",
    "tests/provisioner/test_local_adapter.py",
    "tests/provisioner/test_provisioner_process.py",
}
"""Modules never marked `pure` though no server fixture shows it (paths from the root)."""
PROCESS_FIXTURES = {
    "target", "squid", "proxypy", "own_squid", "proxy_state_dir", "stack", "fake_api",
    "socks5_upstream", "tls_upstream", "vendor_gateway", "sentinel_group",
    "tls_redis",
}  # fmt: skip
"""Fixtures that start processes: a test using one is at least `process`."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test by the most it needs: `kvm` (a real libvirtd), `e2e` (the whole
    system), `messaging` (NATS, usually Redis too), `store` (Redis only), `process` (starts
    processes or servers itself) or `pure` (none of that: seconds for all of them)."""
    root = config.rootpath
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        module = item.path.relative_to(root).as_posix()
        if "libvirtd" in used:
            marker = "kvm"
        elif module.startswith(
            (
                "tests/e2e/",
                "tests/pools/e2e/",
                "tests/faults/test_faults.py",
                "tests/faults/test_outage_intents.py",
                "tests/ui/test_dash",
            )
        ):
            marker = "e2e"
        elif "nats_url" in used or "nats_cluster" in used:
            marker = "messaging"
        elif "redis_url" in used:
            marker = "store"
        elif used & PROCESS_FIXTURES or module in SLOW_MODULES:
            marker = "process"
        else:
            marker = "pure"
        item.add_marker(marker)
        if marker == "kvm" and item.get_closest_marker("timeout") is None:
            # libvirt's C event loop retries poll() on EINTR, so the signal method's alarm
            # never lands while a test waits on libvirtd: a hung KVM test would hang the run.
            # The thread method dumps every stack and ends the run instead.
            item.add_marker(pytest.mark.timeout(method="thread"))


# ---- servers ------------------------------------------------------------------------------


@pytest.fixture(scope="session", autouse=True)
def _no_retry_backoff() -> Iterator[None]:
    """Retries stay bounded and named, but tests never sleep between attempts."""
    with stamina.set_testing(True, attempts=2):
        yield


@pytest.fixture(scope="session")
def nats_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if url := os.environ.get("TEST_NATS_URL"):
        yield url
        return
    server = start_nats(tmp_path_factory.mktemp("nats"))
    yield server.url
    server.stop()


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if url := os.environ.get("TEST_REDIS_URL"):
        yield url
        return
    server = start_redis(tmp_path_factory.mktemp("redis"))
    yield server.url
    server.stop()


@dataclass(frozen=True)
class TargetServer:
    """The dev stack's HTTPS target on 127.0.0.1: what test proxies are asked to reach."""

    url: str
    """`https://127.0.0.1:PORT/probe`."""
    port: int
    ca_file: str
    """The CA that signed its certificate (PEM)."""
    directory: Path


@pytest.fixture(scope="session")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TargetServer]:
    """The dev stack's target, run as `python -m proxyfleet.devstack.target` (its real CLI)."""
    directory = tmp_path_factory.mktemp("target")
    proc = subprocess.Popen(
        [sys.executable, "-m", "proxyfleet.devstack.target", "--port", "0", "--dir", directory],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.fullmatch(r"listening on https://127\.0\.0\.1:(\d+)\n", line)
    assert m, f"unexpected first line from the target: {line!r}"
    port = int(m.group(1))
    yield TargetServer(
        url=f"https://127.0.0.1:{port}/probe",
        port=port,
        ca_file=str(directory / "ca.pem"),
        directory=directory,
    )
    proc.terminate()
    proc.wait(5)


# ---- clients ------------------------------------------------------------------------------


@pytest.fixture
async def redis_client(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    """A client on a clean database: every test starts from an empty system of record."""
    client = connect_redis(redis_url)
    await client.flushdb()
    yield client
    await client.aclose()


@pytest.fixture
async def nc(nats_url: str) -> AsyncIterator[NatsClient]:
    """A NATS client of this test's own, with both streams declared."""
    client = await connect_nats(nats_url, "tests")
    await ensure_streams(client.jetstream())
    yield client
    await client.close()


@pytest.fixture
def clock() -> ManualClock:
    """A ManualClock: time moves only when the test says so. Folders whose tests run real
    processes override it with a SystemClock."""
    return ManualClock()


@pytest.fixture
def registry(redis_client: aioredis.Redis, clock: Clock) -> ProxyRegistry:
    """The proxy registry on a clean Redis, on this test's `clock`."""
    return ProxyRegistry(redis_client, clock)


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path
