"""Pools and quarantine through both clients, against a real API: declare, read, patch and
delete a pool; grant by pool; quarantine and release a proxy."""

from __future__ import annotations

import pytest
from tests.api.helpers import PROVIDER
from tests.client.conftest import LiveApi

from proxyfleet.client import (
    AsyncClient,
    BadRequest,
    Client,
    Conflict,
    KeptProxies,
    NotFound,
    Pool,
    Unavailable,
)


def test_pools_declared_read_patched_and_deleted(live_api: LiveApi) -> None:
    with Client(live_api.url, live_api.admin_token) as admin:
        created = admin.apply_pool("eu", {"provider": PROVIDER, "size": 2, "labels": {"t": "a"}})
        assert (created.name, created.owner, created.gen, created.desired) == ("eu", "api", 1, 2)
        assert created.spec == {"provider": PROVIDER, "size": 2, "labels": {"t": "a"}}
        assert created.status is None  # no controller has looked at it yet
        assert admin.apply_pool("eu", created.spec).gen == 1  # unchanged
        patched = admin.patch_pool("eu", {"size": 3, "labels": None})
        assert (patched.spec, patched.gen) == ({"provider": PROVIDER, "size": 3}, 2)
        assert [p.name for p in admin.pools()] == ["eu"]
        assert admin.pool("eu").desired == 3
        with pytest.raises(BadRequest) as bad:
            admin.patch_pool("eu", {"size": -1})
        assert bad.value.error == "invalid_pool"
        deleting = admin.delete_pool("eu")
        assert isinstance(deleting, Pool)
        assert deleting.deleting
        with pytest.raises(Conflict) as conflict:
            admin.patch_pool("eu", {"size": 1})
        assert conflict.value.error == "pool_deleting"
        admin.apply_pool("us", {"provider": PROVIDER, "size": 1})
        assert admin.delete_pool("us", keep_proxies=True) == KeptProxies(name="us")
        with pytest.raises(NotFound):
            admin.pool("us")


def test_grant_by_pool_and_quarantine(live_api: LiveApi) -> None:
    live_api.ready_proxy("m1", pool="eu")
    live_api.ready_proxy("lone")
    with (
        Client(live_api.url, live_api.admin_token, max_wait=0) as admin,
        Client(live_api.url, live_api.client_token, max_wait=0) as client,
    ):
        admin.apply_pool("eu", {"provider": PROVIDER, "size": 1})
        assert [p.id for p in admin.list_proxies(pool="eu").items] == ["m1"]
        quarantined = admin.quarantine("m1", "inspect")
        assert (quarantined.withheld, quarantined.withheld_reason) == ("quarantined", "inspect")
        with pytest.raises(Unavailable):
            client.grant_lease(pool="eu")
        assert admin.unquarantine("m1").withheld == ""
        with pytest.raises(Conflict) as not_quarantined:
            admin.unquarantine("m1")
        assert not_quarantined.value.error == "proxy_not_quarantined"
        with client.lease(pool="eu", ttl=30) as lease:
            assert admin.get_proxy("m1").lease_id == lease.lease_id
        with pytest.raises(NotFound, match="pool nope not found"):
            client.grant_lease(pool="nope")


async def test_the_async_client_has_the_same_calls(live_api: LiveApi) -> None:
    live_api.ready_proxy("m1", pool="eu")
    async with AsyncClient(live_api.url, live_api.admin_token) as admin:
        await admin.apply_pool("eu", {"provider": PROVIDER, "size": 1})
        assert (await admin.patch_pool("eu", {"size": 2})).desired == 2
        assert [p.name for p in await admin.pools()] == ["eu"]
        assert (await admin.pool("eu")).gen == 2
        assert (await admin.quarantine("m1", "x")).withheld == "quarantined"
        assert (await admin.unquarantine("m1")).withheld == ""
        lease = await admin.grant_lease(pool="eu", ttl=30)
        assert lease.proxy.id == "m1"
        await admin.release_lease(lease.lease_id, lease.epoch)
        assert await admin.delete_pool("eu", keep_proxies=True) == KeptProxies(name="eu")
