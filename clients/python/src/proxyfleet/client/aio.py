"""The asyncio client: `AsyncClient(url, token)`; a lease in an `async with` block renewed
by a background task (aio_held_lease.py). aio.py is written by hand and sync.py generated
from it (tools/unasync.py, `make generate`): a change to either client is made here."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import httpx

from proxyfleet.client import calls, entry_calls, usage_calls
from proxyfleet.client.aio_held_lease import AsyncHeldLease
from proxyfleet.client.calls import DEFAULT_MAX_WAIT, DEFAULT_TIMEOUT, Call
from proxyfleet.client.errors import TransportError, api_error
from proxyfleet.client.models import (
    Event,
    Gap,
    KeptProxies,
    Lease,
    LeasePage,
    LeaseState,
    Pool,
    Probe,
    Provider,
    ProviderEntry,
    Proxy,
    ProxyPage,
    ReleasedLease,
    RenewedLease,
    ReportedLease,
)
from proxyfleet.client.sse import READY, EventStream
from proxyfleet.client.usage_calls import Usage

T = TypeVar("T")


class AsyncClient:
    """The Proxyfleet API over httpx. `url` and `token` default to PROXYFLEET_URL and
    PROXYFLEET_TOKEN; `timeout` bounds each HTTP request; `max_wait` bounds the seconds a
    call spends waiting out 503s (and 409s with Retry-After) before it raises."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_wait: float = DEFAULT_MAX_WAIT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        base_url, token = calls.base_url_and_token(url, token)
        self.max_wait = max_wait
        self._timeout = timeout
        self._http = httpx.AsyncClient(
            base_url=base_url,
            headers=calls.headers_for(token),
            timeout=timeout,
            transport=transport,
        )

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def call(self, call: Call[T], *, max_wait: float | None = None) -> T:
        """Send `call`, waiting out 503s (and 409s with Retry-After) within max_wait."""
        bound = self.max_wait if max_wait is None else max_wait
        started = time.monotonic()
        while True:
            try:
                response = await self._http.request(
                    call.method,
                    call.path,
                    params=call.params,
                    json=call.body,
                    headers=dict(call.headers),
                )
            except httpx.TransportError as e:
                raise TransportError(f"{call.method} {call.path}: {e!r}") from e
            if response.is_success:
                return call.decode(response.content)
            error = api_error(
                response.status_code, response.content, response.headers.get("Retry-After")
            )
            delay = calls.wait_before_retry(error, time.monotonic() - started, bound)
            if delay is None:
                raise error
            await asyncio.sleep(delay)

    # ---- proxies ---------------------------------------------------------------------

    async def list_proxies(self, **filters: Any) -> ProxyPage:
        """One page; filters: provider, zone, phase, labels (dict), pool, cursor, limit."""
        return await self.call(calls.list_proxies(**filters))

    def iter_proxies(self, **filters: Any) -> AsyncIterator[Proxy]:
        """Every proxy matching the filters, following `next_cursor` page by page."""
        return self._follow(self.list_proxies, filters)

    async def _follow(
        self, list_page: Callable[..., Awaitable[Any]], filters: dict[str, Any]
    ) -> AsyncIterator[Any]:
        """The items of every page `list_page` returns, from filters' cursor on."""
        cursor: str | None = filters.pop("cursor", None)
        while True:
            page = await list_page(cursor=cursor, **filters)
            for item in page.items:
                yield item
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def get_proxy(self, proxy_id: str) -> Proxy:
        return await self.call(calls.get_proxy(proxy_id))

    async def create_proxies(self, provider: str, **options: Any) -> list[Proxy]:
        """Options: count, zone, labels, placement, idempotency_key (default: a fresh one,
        reused on this call's retries). Needs an admin token."""
        created = await self.call(calls.create_proxies(provider, **options))
        return created.items

    async def delete_proxy(self, proxy_id: str, *, force: bool = False) -> Proxy:
        return await self.call(calls.delete_proxy(proxy_id, force=force))

    async def quarantine(self, proxy_id: str, reason: str) -> Proxy:
        """Set the proxy aside: never granted, never deleted by its pool (admin)."""
        return await self.call(calls.quarantine(proxy_id, reason))

    async def unquarantine(self, proxy_id: str) -> Proxy:
        """Put a quarantined proxy back in rotation (Conflict when it is not quarantined)."""
        return await self.call(calls.unquarantine(proxy_id))

    # ---- pools (admin) ---------------------------------------------------------------

    async def pools(self) -> list[Pool]:
        return (await self.call(calls.list_pools())).items

    async def pool(self, name: str) -> Pool:
        return await self.call(calls.get_pool(name))

    async def apply_pool(self, name: str, spec: Mapping[str, Any]) -> Pool:
        """Create the pool or replace its spec (a dict as PUT /v1/pools/{name} takes)."""
        return await self.call(calls.apply_pool(name, spec))

    async def patch_pool(self, name: str, patch: Mapping[str, Any]) -> Pool:
        """Merge `patch` into the spec ({"size": 20}; None removes a key)."""
        return await self.call(calls.patch_pool(name, patch))

    async def delete_pool(self, name: str, *, keep_proxies: bool = False) -> Pool | KeptProxies:
        """Drain and delete the pool's members, then the pool (the pool, deleting); with
        keep_proxies, remove the pool now and keep its members as one-off proxies."""
        if keep_proxies:
            return await self.call(calls.remove_pool_keeping_proxies(name))
        return await self.call(calls.delete_pool(name))

    # ---- leases ----------------------------------------------------------------------

    async def grant_lease(self, *, max_wait: float | None = None, **request: Any) -> Lease:
        """Lease a proxy; request: ttl, holder, target, proxy_id, provider, zone, labels,
        pool, distinct ("subnet" or "ip": an exit network or address none of this client's
        other active leases has).
        Waits while no proxy is free (503) or the named one is busy (409 + Retry-After),
        up to max_wait. Every grant sends an Idempotency-Key, one per grant and the same on
        its retries (`idempotency_key=` to choose it), so a grant retried after a lost
        answer can return the same lease; an API that does not honour the header yet on
        grants ignores it."""
        request.setdefault("idempotency_key", str(uuid.uuid4()))
        return await self.call(calls.grant_lease(**request), max_wait=max_wait)

    async def list_leases(self, **filters: Any) -> LeasePage:
        """One page of active leases, soonest expiry first; filters: proxy_id, cursor,
        limit. A client token sees its own leases, an admin token every one."""
        return await self.call(calls.list_leases(**filters))

    def iter_leases(self, **filters: Any) -> AsyncIterator[LeaseState]:
        """Every active lease matching the filters, page by page."""
        return self._follow(self.list_leases, filters)

    async def get_lease(self, lease_id: str) -> LeaseState:
        return await self.call(calls.get_lease(lease_id))

    async def renew_lease(
        self,
        lease_id: str,
        epoch: int,
        *,
        ttl: float | None = None,
        max_wait: float | None = None,
    ) -> RenewedLease:
        return await self.call(calls.renew_lease(lease_id, epoch, ttl=ttl), max_wait=max_wait)

    async def report_lease(
        self, lease_id: str, epoch: int, outcome: str, *, target: str | None = None
    ) -> ReportedLease:
        """outcome: ok, blocked (bans the proxy for the target) or failed (probes it now)."""
        return await self.call(calls.report_lease(lease_id, epoch, outcome, target=target))

    async def release_lease(self, lease_id: str, epoch: int) -> ReleasedLease:
        return await self.call(calls.release_lease(lease_id, epoch))

    def lease(
        self, *, ttl: float | None = None, max_wait: float | None = None, **selector: Any
    ) -> AsyncHeldLease:
        """`async with client.lease(target="example.com", ttl=120) as lease:` — granted
        on entry (see grant_lease for the selector and waiting), renewed by a background
        task, reported `failed` if the block raises, released on exit."""
        return AsyncHeldLease(self, ttl=ttl, max_wait=max_wait, selector=selector)

    def hold(self, lease: Lease, *, ttl: float | None = None) -> AsyncHeldLease:
        """`async with client.hold(lease):` — like `lease()` for a lease granted already
        (grant_lease): renewed in the background, released on exit."""
        return AsyncHeldLease(self, ttl=ttl, max_wait=None, selector={}, granted=lease)

    # ---- providers -------------------------------------------------------------------

    async def list_providers(self) -> list[Provider]:
        providers = await self.call(calls.list_providers())
        return providers.items

    async def add_provider_entry(self, provider: str, url: str, **options: Any) -> ProviderEntry:
        """Add a proxy to a provider that lists the proxies it is given (zone=, labels=,
        name=); the same entry again changes nothing."""
        return await self.call(entry_calls.add_provider_entry(provider, url, **options))

    async def provider_entries(self, provider: str) -> list[ProviderEntry]:
        """The proxies added to `provider` at run time, passwords masked."""
        entries = await self.call(entry_calls.list_provider_entries(provider))
        return entries.items

    async def remove_provider_entry(self, provider: str, entry_id: str) -> None:
        """Remove one: its proxy drains, then is forgotten."""
        await self.call(entry_calls.remove_provider_entry(provider, entry_id))

    async def usage(self, client: str | None = None, days: int = 7) -> Usage:
        """Bytes and connections through the gateways per UTC day, the last `days`."""
        return await self.call(usage_calls.get_usage(client, days))

    # ---- events ----------------------------------------------------------------------

    async def events(
        self,
        *,
        types: Sequence[str] = (),
        proxy_id: str | None = None,
        probes: bool = False,
        on_ready: Callable[[], None] | None = None,
    ) -> AsyncGenerator[Event | Probe | Gap, None]:
        """The live event stream (GET /v1/events), until the caller stops iterating or the
        API ends it. `types`: event types or families (`proxy`, `lease.granted`);
        `probes`: probe results too. A Gap says events were dropped (a slow reader).
        `on_ready` is called once the subscription is live (what happens after it is
        seen); `aclose()` the generator to stop early. Raises ApiError for an error answer
        and TransportError when the API cannot be reached or stays silent past
        keep-alives."""
        call = calls.events(types=types, proxy_id=proxy_id, probes=probes)
        timeout = httpx.Timeout(self._timeout, read=calls.EVENTS_READ_TIMEOUT)
        try:
            async with self._http.stream(
                call.method,
                call.path,
                params=call.params,
                headers=dict(call.headers),
                timeout=timeout,
            ) as response:
                if not response.is_success:
                    raise api_error(
                        response.status_code,
                        await response.aread(),
                        response.headers.get("Retry-After"),
                    )
                stream = EventStream()
                async for line in response.aiter_lines():
                    item = stream.item(line)
                    if item == READY:
                        if on_ready is not None:
                            on_ready()
                    elif isinstance(item, Event | Probe | Gap):
                        yield item
        except httpx.TransportError as e:
            raise TransportError(f"{call.method} {call.path}: {e!r}") from e
