"""Health against the API's own GET /echo, through a real Squid leaving from its own
loopback address: the address the echo saw is the proxy's exit address."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator

import pytest
from tests.api.helpers import api_settings, providers_config
from tests.api.serving import serve
from tests.health.conftest import Collector, MakeProxy, RunWorker, _squid

from proxyfleet.api.app import create_app
from proxyfleet.api.deps import AppDeps
from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Phase

EXIT = "127.0.0.9"


@pytest.fixture
async def api_port(redis_url: str, nats_url: str) -> AsyncIterator[int]:
    app = create_app(
        api_settings(redis_url, nats_url),
        AppDeps(providers=providers_config(), clock=ManualClock()),
    )
    url, stop = await serve(app)
    yield int(url.rsplit(":", 1)[1])
    await stop()


async def test_health_learns_the_exit_address_from_the_apis_echo(
    api_port: int,
    make_proxy: MakeProxy,
    registry: ProxyRegistry,
    run_worker: RunWorker,
    probe_results: Collector,
) -> None:
    squid = _squid([api_port], outgoing=EXIT)
    squid.start()
    try:
        proxy = await make_proxy(squid.port)
        async with run_worker(target=f"http://127.0.0.1:{api_port}/echo", require_ip=("local",)):
            await probe_results.wait_for(
                lambda: any(r.proxy_id == proxy.id and r.ok for r in probe_results.items)
            )
            await probe_results.wait_for(
                lambda: sum(r.proxy_id == proxy.id for r in probe_results.items) >= 2
            )
    finally:
        squid.kill()
        shutil.rmtree(squid.workdir, ignore_errors=True)
    stored = await registry.get(proxy.id)
    assert stored is not None
    assert stored.phase is Phase.READY
    assert (stored.egress_ip, stored.egress_net) == (EXIT, "127.0.0.0/24")
    assert all(r.egress_ip == EXIT for r in probe_results.items if r.proxy_id == proxy.id)
