"""The client's pure parts: error mapping, Retry-After, when to wait, Idempotency-Key reuse
(through httpx's MockTransport, its public hook for a transport of one's own)."""

from __future__ import annotations

import email.utils

import httpx
import pytest

from proxyfleet.client import (
    ApiError,
    BadRequest,
    Client,
    Conflict,
    NotFound,
    ServerError,
    TransportError,
    Unavailable,
)
from proxyfleet.client.calls import grant_lease, list_proxies, report_lease, wait_before_retry
from proxyfleet.client.errors import api_error, parse_retry_after
from proxyfleet.client.handle import renew_interval
from proxyfleet.client.models import Lease
from proxyfleet.devstack.servers import free_port

LEASE_JSON = {
    "lease_id": "l1",
    "epoch": 3,
    "expires_at": 160.0,
    "granted_at": 100.0,
    "holder": "",
    "target": "",
    "proxy": {"id": "p1", "host": "h", "port": 1, "url": "http://u:p@h:1", "provider": "x"},
    "a_field_from_a_newer_server": {"nested": True},
}


def test_errors_map_from_status_and_body() -> None:
    e = api_error(404, b'{"error": "lease_not_found", "message": "no lease l1"}', None)
    assert isinstance(e, NotFound)
    assert (e.status, e.error, e.message, e.retry_after) == (
        404,
        "lease_not_found",
        "no lease l1",
        None,
    )
    assert isinstance(api_error(413, b"{}", None), BadRequest)
    assert isinstance(api_error(502, b"<html>bad gateway</html>", None), ServerError)
    other = api_error(418, b"teapot", None)
    assert type(other) is ApiError
    assert (other.error, other.message) == ("http_418", "teapot")
    busy = api_error(409, b'{"error": "proxy_leased", "message": "taken"}', "7")
    assert isinstance(busy, Conflict)
    assert busy.retry_after == 7.0


def test_retry_after_as_seconds_or_date() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    date = email.utils.formatdate(1000.0 + 30, usegmt=True)
    assert parse_retry_after(date, now=1000.0) == pytest.approx(30.0)


def test_what_is_waited_for_and_for_how_long() -> None:
    none_free = Unavailable(503, "unavailable", "none free", retry_after=4.0)
    assert wait_before_retry(none_free, waited=0, max_wait=30) == 4.0
    assert wait_before_retry(none_free, waited=28, max_wait=30) == 2.0
    assert wait_before_retry(none_free, waited=30, max_wait=30) is None
    assert wait_before_retry(Unavailable(503, "u", "m"), waited=0, max_wait=30) == 1.0
    assert wait_before_retry(Conflict(409, "proxy_leased", "m", 2.0), 0, 30) == 2.0
    assert wait_before_retry(Conflict(409, "stale_epoch", "m"), 0, 30) is None
    assert wait_before_retry(NotFound(404, "not_found", "m"), 0, 30) is None


def test_requests_built_from_arguments() -> None:
    call = list_proxies(zone="z1", labels={"a": "1", "b": "2"}, limit=5)
    assert call.params == [("zone", "z1"), ("limit", 5), ("label", "a=1"), ("label", "b=2")]
    grant = grant_lease(target="example.com", ttl=30)
    assert grant.body == {"target": "example.com", "ttl": 30}
    assert grant.headers["Idempotency-Key"]
    with pytest.raises(ValueError, match="outcome"):
        report_lease("l1", 1, "great")


def test_unknown_fields_are_ignored_and_missing_optional_ones_defaulted() -> None:
    lease = grant_lease().decode(httpx.Response(201, json=LEASE_JSON).content)
    assert isinstance(lease, Lease)
    assert (lease.proxy.zone, lease.epoch) == ("", 3)


def test_renewal_interval_is_half_the_granted_ttl() -> None:
    assert renew_interval(120) == 60
    assert renew_interval(0.1) == 0.2


def test_a_grant_keeps_its_idempotency_key_across_retries() -> None:
    keys: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        keys.append(request.headers["Idempotency-Key"])
        if len(keys) in {1, 2}:
            body = {"error": "unavailable", "message": "none free"}
            return httpx.Response(503, json=body, headers={"Retry-After": "0"})
        return httpx.Response(201, json=LEASE_JSON)

    transport = httpx.MockTransport(answer)
    with Client("http://api.invalid", "t", transport=transport, max_wait=5) as client:
        assert client.grant_lease().lease_id == "l1"
        assert len(keys) == 3
        assert len(set(keys)) == 1
        client.grant_lease()
    assert keys[3] != keys[0]  # a new grant, a new key


def test_an_unreachable_api_raises_transport_error() -> None:
    port = free_port()  # nothing listens there
    with (
        Client(f"http://127.0.0.1:{port}", "t", timeout=2) as client,
        pytest.raises(TransportError, match="GET /v1/providers"),
    ):
        client.list_providers()


def test_no_url_anywhere_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROXYFLEET_URL", raising=False)
    with pytest.raises(ValueError, match="PROXYFLEET_URL"):
        Client()
