"""AsyncClient against a real API: the same calls, errors, waiting and `async with` lease."""

from __future__ import annotations

import asyncio
import time

import pytest
from tests.api.helpers import PROVIDER
from tests.client.conftest import LiveApi

from proxyfleet.client import AsyncClient, NotFound, Unavailable

PROXY_URL = "http://user:s3cret-pass@127.0.0.1:3128"


async def test_async_grant_renew_report_release(live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    async with AsyncClient(live_api.url, live_api.client_token) as client:
        lease = await client.grant_lease(target="example.com", ttl=60)
        assert lease.proxy.url == PROXY_URL
        renewed = await client.renew_lease(lease.lease_id, lease.epoch, ttl=120)
        assert renewed.expires_at > lease.expires_at
        assert (await client.report_lease(lease.lease_id, lease.epoch, "ok")).outcome == "ok"
        await client.release_lease(lease.lease_id, lease.epoch)
        assert (await client.get_lease(lease.lease_id)).state == "released"
        with pytest.raises(NotFound) as e:
            await client.get_lease("no-such-lease")
        assert e.value.message


async def test_async_lease_released_on_exit_and_failed_on_an_exception(
    live_api: LiveApi,
) -> None:
    live_api.ready_proxy("p1")
    live_api.ready_proxy("p2")
    async with AsyncClient(live_api.url, live_api.client_token) as client:
        async with client.lease(target="example.com", ttl=60) as lease:
            assert lease.proxies == {"http": lease.proxy_url, "https": lease.proxy_url}
            assert (await client.get_lease(lease.lease_id)).state == "active"
        assert (await client.get_lease(lease.lease_id)).state == "released"

        held = client.lease(target="example.com", ttl=60)
        with pytest.raises(ValueError, match="bad page"):
            async with held:
                raise ValueError("bad page")
        assert (await client.get_lease(held.lease_id)).state == "released"
    reported = await asyncio.to_thread(live_api.wait_for_event, "lease.reported", held.lease_id)
    assert reported.data.outcome == "failed"


async def test_async_background_renewal_keeps_a_short_lease_alive(live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    async with AsyncClient(live_api.url, live_api.client_token) as client:
        async with client.lease(ttl=2) as lease:
            await asyncio.sleep(5)  # 2.5 TTLs: unrenewed, it would have expired
            assert (await client.get_lease(lease.lease_id)).state == "active"
            assert lease.renew_error is None
            assert (await lease.report_blocked()).outcome == "blocked"
        assert (await client.get_lease(lease.lease_id)).state == "released"


async def test_async_503_waited_for_then_raised(live_api: LiveApi) -> None:
    async with AsyncClient(live_api.url, live_api.client_token, max_wait=2.5) as client:
        started = time.monotonic()
        with pytest.raises(Unavailable) as e:
            await client.grant_lease()
        waited = time.monotonic() - started
    assert e.value.message
    assert 2.0 <= waited < 10, f"waited {waited:.1f} s with max_wait=2.5"


async def test_async_grant_succeeds_once_a_proxy_becomes_ready(live_api: LiveApi) -> None:
    async with AsyncClient(live_api.url, live_api.client_token, max_wait=15) as client:
        grant = asyncio.create_task(client.grant_lease(target="example.com"))
        await asyncio.sleep(1.5)  # the grant is waiting out 503s meanwhile
        assert not grant.done()
        await asyncio.to_thread(live_api.ready_proxy, "late")
        lease = await asyncio.wait_for(grant, 10)
        assert lease.proxy.id == "late"


async def test_async_proxies_iterated_across_pages(live_api: LiveApi) -> None:
    async with AsyncClient(live_api.url, live_api.admin_token) as admin:
        created = await admin.create_proxies(PROVIDER, count=3)
        seen = [p.id async for p in admin.iter_proxies(provider=PROVIDER, limit=1)]
        assert sorted(seen) == sorted(p.id for p in created)
        assert [p.name for p in await admin.list_providers()]
