"""The sync Client against a real API: calls, errors with the API's message, waiting."""

from __future__ import annotations

import time

import httpx
import pytest
from tests.api.helpers import PROVIDER
from tests.client.conftest import LiveApi

from proxyfleet.client import (
    Client,
    Conflict,
    Forbidden,
    NotFound,
    Unauthorized,
    Unavailable,
)


def test_grant_renew_report_release(live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    with Client(live_api.url, live_api.client_token) as client:
        lease = client.grant_lease(target="example.com", ttl=60, holder="tests")
        assert lease.proxy.id == "p1"
        assert lease.proxy.url == "http://user:s3cret-pass@127.0.0.1:3128"
        assert (lease.target, lease.holder) == ("example.com", "tests")
        assert client.get_lease(lease.lease_id).state == "active"

        renewed = client.renew_lease(lease.lease_id, lease.epoch, ttl=120)
        assert renewed.expires_at > lease.expires_at
        reported = client.report_lease(lease.lease_id, lease.epoch, "ok")
        assert (reported.outcome, reported.target) == ("ok", "example.com")
        released = client.release_lease(lease.lease_id, lease.epoch)
        assert released.state == "released"
        assert client.get_lease(lease.lease_id).state == "released"


def test_errors_carry_the_api_code_message_and_status(live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    raw = httpx.get(
        f"{live_api.url}/v1/leases/no-such-lease",
        headers={"Authorization": f"Bearer {live_api.client_token}"},
    ).json()
    with Client(live_api.url, live_api.client_token) as client:
        with pytest.raises(NotFound) as not_found:
            client.get_lease("no-such-lease")
        assert (not_found.value.status, not_found.value.error) == (404, raw["error"])
        assert not_found.value.message == raw["message"]

        lease = client.grant_lease(ttl=60)
        with pytest.raises(Conflict) as stale:
            client.renew_lease(lease.lease_id, lease.epoch + 1)
        assert stale.value.status == 409
        assert stale.value.message

        with pytest.raises(Forbidden) as forbidden:
            client.create_proxies(PROVIDER)
        assert forbidden.value.status == 403
    with Client(live_api.url, "not-a-token") as stranger, pytest.raises(Unauthorized) as e:
        stranger.list_providers()
    assert (e.value.status, e.value.error) == (401, "unauthorized")


def test_503_is_waited_for_up_to_max_wait_then_raised_with_the_message(
    live_api: LiveApi,
) -> None:
    with Client(live_api.url, live_api.client_token, max_wait=2.5) as client:
        started = time.monotonic()
        with pytest.raises(Unavailable) as e:
            client.grant_lease(target="example.com")
        waited = time.monotonic() - started
    assert e.value.status == 503
    assert e.value.message  # the API's own words, e.g. "no ready proxy ..."
    assert e.value.retry_after is not None
    assert 2.0 <= waited < 10, f"waited {waited:.1f} s with max_wait=2.5"


def test_a_busy_named_proxy_is_waited_for(live_api: LiveApi) -> None:
    """409 + Retry-After (the proxy is leased, then cooling down) is waited out."""
    live_api.ready_proxy("p1")
    with Client(live_api.url, live_api.client_token, max_wait=15) as client:
        first = client.grant_lease(ttl=1)  # not renewed: expires in 1 s
        second = client.grant_lease(proxy_id="p1", ttl=30)
        assert second.proxy.id == "p1"
        assert second.lease_id != first.lease_id
        assert client.get_lease(first.lease_id).state == "expired"
        with pytest.raises(Conflict) as e:
            client.grant_lease(proxy_id="p1", max_wait=0)
        assert e.value.retry_after is not None


def test_proxies_and_providers(live_api: LiveApi) -> None:
    with Client(live_api.url, live_api.admin_token) as admin:
        created = admin.create_proxies(PROVIDER, count=5, zone="z2", labels={"team": "qa"})
        assert len(created) == 5
        assert {p.phase for p in created} == {"pending"}
        ids = {p.id for p in created}
        page = admin.list_proxies(provider=PROVIDER, limit=2)
        assert len(page.items) == 2
        assert page.next_cursor
        assert {p.id for p in admin.iter_proxies(labels={"team": "qa"}, limit=2)} == ids
        assert list(admin.iter_proxies(zone="z1")) == []
        one = created[0]
        assert admin.get_proxy(one.id).labels == {"team": "qa"}
        assert admin.delete_proxy(one.id).phase in {"deleting", "deleted"}
        providers = {p.name: p for p in admin.list_providers()}
        assert providers[PROVIDER].zones == ["z1", "z2"]


def test_url_and_token_from_the_environment(
    live_api: LiveApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROXYFLEET_URL", live_api.url)
    monkeypatch.setenv("PROXYFLEET_TOKEN", live_api.client_token)
    with Client() as client:
        assert client.list_providers()


def test_leases_listed_soonest_expiry_first_page_by_page(live_api: LiveApi) -> None:
    for pid in ("p1", "p2", "p3"):
        live_api.ready_proxy(pid)
    with Client(live_api.url, live_api.client_token) as client:
        granted = [client.grant_lease(ttl=ttl) for ttl in (90, 30, 60)]
        page = client.list_leases(limit=2)
        assert len(page.items) == 2
        assert page.next_cursor
        every = list(client.iter_leases(limit=1))
        assert [x.lease_id for x in every] == [granted[i].lease_id for i in (1, 2, 0)]
        assert all(x.state == "active" for x in every)
        one = client.list_leases(proxy_id=granted[0].proxy.id).items
        assert [x.lease_id for x in one] == [granted[0].lease_id]
        client.release_lease(granted[1].lease_id, granted[1].epoch)
        assert len(list(client.iter_leases())) == 2
    with Client(live_api.url, live_api.admin_token) as admin:
        assert len(list(admin.iter_leases())) == 2  # an admin sees the client's too


def test_a_grant_retried_with_its_idempotency_key_returns_the_same_lease(
    live_api: LiveApi,
) -> None:
    live_api.ready_proxy("p1")
    live_api.ready_proxy("p2")
    with Client(live_api.url, live_api.client_token) as client:
        first = client.grant_lease(ttl=60, idempotency_key="retry-me")
        again = client.grant_lease(ttl=60, idempotency_key="retry-me")
        assert (again.lease_id, again.epoch, again.proxy.url) == (
            first.lease_id,
            first.epoch,
            first.proxy.url,
        )
        other = client.grant_lease(ttl=60)
        assert other.lease_id != first.lease_id
