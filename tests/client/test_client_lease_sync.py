"""`with client.lease(...)` against a real API: release on exit, `failed` on an exception,
background renewal past the TTL, `blocked` when told."""

from __future__ import annotations

import time

import pytest
from tests.client.conftest import LiveApi

from proxyfleet.client import Client, Conflict

PROXY_URL = "http://user:s3cret-pass@127.0.0.1:3128"


def test_the_block_gets_the_proxy_and_the_lease_is_released_on_exit(live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    with Client(live_api.url, live_api.client_token) as client:
        with client.lease(target="example.com", ttl=60, zone="z1") as lease:
            assert lease.proxy_url == PROXY_URL
            assert lease.proxies == {"http": PROXY_URL, "https": PROXY_URL}
            assert lease.httpx_proxy == PROXY_URL
            assert client.get_lease(lease.lease_id).state == "active"
        assert client.get_lease(lease.lease_id).state == "released"


def test_an_exception_in_the_block_reports_failed_then_releases(live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    with Client(live_api.url, live_api.client_token) as client:
        held = client.lease(target="example.com", ttl=60)
        with pytest.raises(RuntimeError, match="the page broke"), held:
            raise RuntimeError("the page broke")
        assert client.get_lease(held.lease_id).state == "released"
    reported = live_api.wait_for_event("lease.reported", held.lease_id)
    assert reported.data.outcome == "failed"


def test_background_renewal_keeps_a_short_lease_alive_past_its_ttl(live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    with Client(live_api.url, live_api.client_token) as client:
        with client.lease(ttl=2) as lease:
            first_expiry = lease.expires_at
            time.sleep(5)  # 2.5 TTLs: without renewal the sweeper expires it after one
            state = client.get_lease(lease.lease_id)
            assert state.state == "active"
            assert state.expires_at > first_expiry + 1
            assert lease.renew_error is None
        assert client.get_lease(lease.lease_id).state == "released"
        assert len(live_api.events_of("lease.renewed", lease.lease_id)) >= 2


def test_report_blocked_when_told(live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    with Client(live_api.url, live_api.client_token, max_wait=0) as client:
        with client.lease(target="shop.example", ttl=60) as lease:
            assert lease.report_blocked().outcome == "blocked"
            assert lease.report("ok", target="other.example").target == "other.example"
        assert client.get_lease(lease.lease_id).state == "released"


def test_a_release_inside_the_block_is_not_repeated_on_exit(live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    with Client(live_api.url, live_api.client_token) as client:
        with client.lease(ttl=60) as lease:
            assert lease.release().state == "released"
        assert client.get_lease(lease.lease_id).state == "released"
        with pytest.raises(Conflict):
            client.renew_lease(lease.lease_id, lease.epoch)
