"""What each API call sends and decodes, and when an error is worth waiting for: shared by
the sync and async clients (no I/O here)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

import msgspec

from proxyfleet.client.errors import ApiError, Conflict, Unavailable
from proxyfleet.client.models import (
    KeptProxies,
    Lease,
    LeasePage,
    LeaseState,
    Pool,
    PoolList,
    ProviderList,
    Proxy,
    ProxyBatch,
    ProxyPage,
    ReleasedLease,
    RenewedLease,
    ReportedLease,
)

T = TypeVar("T")

DEFAULT_TIMEOUT = 10.0
"""Seconds for one HTTP request."""
DEFAULT_MAX_WAIT = 30.0
"""Seconds a call may spend waiting out 503s (and 409s with Retry-After) before it raises."""
DEFAULT_RETRY_AFTER = 1.0
"""Wait before retrying a 503 that named no Retry-After."""
EVENTS_READ_TIMEOUT = 60.0
"""Seconds the event stream may stay silent before the client gives up on it: the API
sends a keep-alive comment every 15 s."""
OUTCOMES = ("ok", "blocked", "failed")
MERGE_PATCH = "application/merge-patch+json"
Param = tuple[str, str | int | float | bool | None]
"""A query parameter (repeatable: a list of them, not a dict)."""


@dataclass(frozen=True)
class Call(Generic[T]):
    """One API request and the type of its answer."""

    method: str
    path: str
    returns: type[T]
    params: list[Param] = field(default_factory=list)
    body: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def decode(self, content: bytes) -> T:
        if not content and self.returns is type(None):  # a 204: NoneType() is None
            return self.returns()
        return msgspec.json.decode(content, type=self.returns)


def base_url_and_token(url: str | None, token: str | None) -> tuple[str, str | None]:
    """The arguments, else PROXYFLEET_URL / PROXYFLEET_TOKEN."""
    url = url or os.environ.get("PROXYFLEET_URL")
    if not url:
        raise ValueError("no API URL: pass url=... or set PROXYFLEET_URL")
    return url.rstrip("/"), token or os.environ.get("PROXYFLEET_TOKEN") or None


def headers_for(token: str | None) -> dict[str, str]:
    headers = {"Accept": "application/json", "User-Agent": "proxyfleet-client/0.1"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def wait_before_retry(error: ApiError, waited: float, max_wait: float) -> float | None:
    """Seconds to wait before trying again, or None to raise `error` now. A 503 is waited
    for (its Retry-After, else 1 s); a 409 only when it names a Retry-After (the proxy asked
    for is taken or cooling down: waiting helps; a stale epoch has none). Never past
    `max_wait` seconds in all."""
    if isinstance(error, Unavailable):
        delay = error.retry_after if error.retry_after is not None else DEFAULT_RETRY_AFTER
    elif isinstance(error, Conflict) and error.retry_after is not None:
        delay = error.retry_after
    else:
        return None
    left = max_wait - waited
    if left <= 0:
        return None
    return min(max(delay, 0.05), left)


def _drop_none(body: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


def list_proxies(
    *,
    provider: str | None = None,
    zone: str | None = None,
    phase: str | None = None,
    labels: Mapping[str, str] | None = None,
    cursor: str | None = None,
    limit: int | None = None,
    include_deleted: bool = False,
    pool: str | None = None,
) -> Call[ProxyPage]:
    """Deleted proxies are left out unless `include_deleted` (or phase="deleted")."""
    params: list[Param] = [
        (k, v)
        for k, v in (
            ("provider", provider),
            ("zone", zone),
            ("phase", phase),
            ("pool", pool),
            ("cursor", cursor),
            ("limit", limit),
            ("include_deleted", "true" if include_deleted else None),
        )
        if v is not None and v != ""
    ]
    params += [("label", f"{k}={v}") for k, v in (labels or {}).items()]
    return Call("GET", "/v1/proxies", ProxyPage, params=params)


def get_proxy(proxy_id: str) -> Call[Proxy]:
    return Call("GET", f"/v1/proxies/{proxy_id}", Proxy)


def create_proxies(
    provider: str,
    *,
    count: int = 1,
    zone: str | None = None,
    labels: Mapping[str, str] | None = None,
    placement: Mapping[str, str] | None = None,
    idempotency_key: str | None = None,
) -> Call[ProxyBatch]:
    body = _drop_none(
        {
            "provider": provider,
            "count": count,
            "zone": zone,
            "labels": dict(labels) if labels else None,
            "placement": dict(placement) if placement else None,
        }
    )
    key = idempotency_key or str(uuid.uuid4())
    return Call("POST", "/v1/proxies", ProxyBatch, body=body, headers={"Idempotency-Key": key})


def delete_proxy(proxy_id: str, *, force: bool = False) -> Call[Proxy]:
    params: list[Param] = [("force", "true")] if force else []
    return Call("DELETE", f"/v1/proxies/{proxy_id}", Proxy, params=params)


def quarantine(proxy_id: str, reason: str) -> Call[Proxy]:
    return Call("POST", f"/v1/proxies/{proxy_id}/quarantine", Proxy, body={"reason": reason})


def unquarantine(proxy_id: str) -> Call[Proxy]:
    return Call("DELETE", f"/v1/proxies/{proxy_id}/quarantine", Proxy)


def grant_lease(
    *,
    ttl: float | None = None,
    holder: str | None = None,
    target: str | None = None,
    proxy_id: str | None = None,
    provider: str | None = None,
    zone: str | None = None,
    labels: Mapping[str, str] | None = None,
    pool: str | None = None,
    distinct: Literal["ip", "subnet"] | None = None,
    idempotency_key: str | None = None,
) -> Call[Lease]:
    body = _drop_none(
        {
            "ttl": ttl,
            "holder": holder,
            "target": target,
            "proxy_id": proxy_id,
            "provider": provider,
            "zone": zone,
            "labels": dict(labels) if labels else None,
            "pool": pool,
            "distinct": distinct,
        }
    )
    key = idempotency_key or str(uuid.uuid4())
    return Call("POST", "/v1/leases", Lease, body=body, headers={"Idempotency-Key": key})


def list_leases(
    *, proxy_id: str | None = None, cursor: str | None = None, limit: int | None = None
) -> Call[LeasePage]:
    params: list[Param] = [
        (k, v)
        for k, v in (("proxy_id", proxy_id), ("cursor", cursor), ("limit", limit))
        if v is not None and v != ""
    ]
    return Call("GET", "/v1/leases", LeasePage, params=params)


def get_lease(lease_id: str) -> Call[LeaseState]:
    return Call("GET", f"/v1/leases/{lease_id}", LeaseState)


def renew_lease(lease_id: str, epoch: int, *, ttl: float | None = None) -> Call[RenewedLease]:
    body = _drop_none({"epoch": epoch, "ttl": ttl})
    return Call("POST", f"/v1/leases/{lease_id}/renew", RenewedLease, body=body)


def report_lease(
    lease_id: str, epoch: int, outcome: str, *, target: str | None = None
) -> Call[ReportedLease]:
    if outcome not in OUTCOMES:
        raise ValueError(f"outcome must be one of {', '.join(OUTCOMES)}, not {outcome!r}")
    body = _drop_none({"epoch": epoch, "outcome": outcome, "target": target})
    return Call("POST", f"/v1/leases/{lease_id}/report", ReportedLease, body=body)


def release_lease(lease_id: str, epoch: int) -> Call[ReleasedLease]:
    return Call("POST", f"/v1/leases/{lease_id}/release", ReleasedLease, body={"epoch": epoch})


def list_pools() -> Call[PoolList]:
    return Call("GET", "/v1/pools", PoolList)


def get_pool(name: str) -> Call[Pool]:
    return Call("GET", f"/v1/pools/{name}", Pool)


def apply_pool(name: str, spec: Mapping[str, Any]) -> Call[Pool]:
    """PUT: create the pool or replace its spec (the same spec changes nothing)."""
    return Call("PUT", f"/v1/pools/{name}", Pool, body=dict(spec))


def patch_pool(name: str, patch: Mapping[str, Any]) -> Call[Pool]:
    """A JSON merge patch of the spec: {"size": 20}; None (null) removes a key."""
    return Call(
        "PATCH",
        f"/v1/pools/{name}",
        Pool,
        body=dict(patch),
        headers={"Content-Type": MERGE_PATCH},
    )


def delete_pool(name: str) -> Call[Pool]:
    """The pool drains, then goes: answered with it as it is now (deleting)."""
    return Call("DELETE", f"/v1/pools/{name}", Pool)


def remove_pool_keeping_proxies(name: str) -> Call[KeptProxies]:
    """The pool goes now; its members stay as one-off proxies."""
    return Call("DELETE", f"/v1/pools/{name}", KeptProxies, params=[("keep_proxies", "true")])


def list_providers() -> Call[ProviderList]:
    return Call("GET", "/v1/providers", ProviderList)


def events(
    *, types: Sequence[str] = (), proxy_id: str | None = None, probes: bool = False
) -> Call[None]:
    """GET /v1/events: `types` are event types (proxy.ready) or families (proxy, lease).
    Its answer is a stream, read line by line (`sse`), never decoded whole."""
    params: list[Param] = [("type", t) for t in types]
    if proxy_id:
        params.append(("proxy_id", proxy_id))
    if probes:
        params.append(("probes", "true"))
    return Call(
        "GET", "/v1/events", type(None), params=params, headers={"Accept": "text/event-stream"}
    )
