"""/v1/proxies (admin scope)."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, delete, get, post
from litestar.di import NamedDependency
from litestar.params import FromQuery, HeaderParameter, Parameter
from litestar.status_codes import HTTP_200_OK, HTTP_202_ACCEPTED

from proxyfleet.api.http.auth import Principal, Scope
from proxyfleet.api.http.errors import error_responses
from proxyfleet.api.http.fields import JSONInput, parse_label_filters, strict
from proxyfleet.api.http.idempotency import MAX_KEY_CHARS
from proxyfleet.api.proxies.schemas import (
    CreateProxies,
    ProxyBatch,
    ProxyOut,
    ProxyPage,
    Quarantine,
)
from proxyfleet.api.proxies.service import ProxyService
from proxyfleet.common.wire.models import Phase

POOL_NAME_PATTERN = r"^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$"
"""pool_spec.PoolName's pattern."""
Caller = Request[Principal, Any, Any]
"""The request, for its `user`: the caller the auth guard identified."""

CURSOR_PATTERN = r"^([a-z0-9][a-z0-9-]{0,63})?$"
"""A next_cursor is the last proxy id of a page (the ids of fields.ProxyId); empty: page one."""
ProxyIdParam = Annotated[str, Parameter(max_length=64, description="The proxy id.")]
IdempotencyKey = Annotated[
    str | None,
    HeaderParameter(
        name="Idempotency-Key",
        max_length=MAX_KEY_CHARS,
        description=(
            "Makes a retried create safe: a create with a key seen in the last 24 hours "
            "(--idempotency-ttl) and the same body stores nothing and answers with the "
            "proxies that create made; the same key with another body is a 409 "
            "(idempotency_key_reused). 1-255 visible ASCII characters, e.g. a UUID; keys "
            "are per token."
        ),
    ),
]


class ProxyController(Controller):
    path = "/proxies"
    tags = ["proxies"]
    opt = {"scope": Scope.ADMIN}

    @post(
        "/",
        status_code=HTTP_202_ACCEPTED,
        response_description="The proxies stored as pending; they are provisioned asynchronously",
        responses=error_responses(400, 401, 403, 409, 413, 503),
    )
    async def create_proxies(
        self,
        data: JSONInput[CreateProxies],
        proxy_service: NamedDependency[ProxyService],
        request: Caller,
        idempotency_key: IdempotencyKey = None,
    ) -> ProxyBatch:
        """Create `count` proxies: stored as pending, then provisioned asynchronously.
        409 `max_proxies` when the provider would have more than its `max_proxies`
        (nothing is created); see `Idempotency-Key` for safe retries."""
        body = strict(data, CreateProxies)
        proxies = await proxy_service.create(
            body.provider,
            body.zone,
            body.count,
            body.labels,
            body.placement,
            idempotency_key=idempotency_key,
            caller=request.user.name,
        )
        return ProxyBatch(items=[ProxyOut.of(p) for p in proxies])

    @get("/", responses=error_responses(400, 401, 403, 503))
    async def list_proxies(
        self,
        proxy_service: NamedDependency[ProxyService],
        provider: FromQuery[str | None] = None,
        zone: FromQuery[str | None] = None,
        phase: FromQuery[Phase | None] = None,
        label: Annotated[
            list[str] | None, Parameter(description="Label filter key=value (repeatable).")
        ] = None,
        pool: Annotated[
            str | None,
            Parameter(
                pattern=POOL_NAME_PATTERN,
                max_length=63,
                description="Only the members of this pool (those with its "
                "`proxyfleet-pool` label).",
            ),
        ] = None,
        cursor: Annotated[
            str,
            Parameter(
                pattern=CURSOR_PATTERN,
                description="The `next_cursor` of the previous page (a malformed one is a 400).",
            ),
        ] = "",
        limit: Annotated[int, Parameter(ge=1, le=500)] = 100,
        include_deleted: Annotated[
            bool,
            Parameter(description="List deleted proxies too (phase=deleted lists only them)."),
        ] = False,
    ) -> ProxyPage:
        """One page of proxies in creation order, filtered; follow `next_cursor`. Deleted
        proxies are left out unless asked for (include_deleted=true or phase=deleted)."""
        items, next_cursor = await proxy_service.page(
            include_deleted=include_deleted,
            provider=provider,
            zone=zone,
            phase=phase,
            labels=parse_label_filters(label),
            cursor=cursor,
            limit=limit,
            pool=pool,
        )
        return ProxyPage(items=[ProxyOut.of(p) for p in items], next_cursor=next_cursor or None)

    @get("/{proxy_id:str}", responses=error_responses(400, 401, 403, 404, 503))
    async def get_proxy(
        self, proxy_id: ProxyIdParam, proxy_service: NamedDependency[ProxyService]
    ) -> ProxyOut:
        """One proxy (without its credentials)."""
        return ProxyOut.of(await proxy_service.get(proxy_id))

    @delete(
        "/{proxy_id:str}",
        status_code=HTTP_202_ACCEPTED,
        response_description="The proxy, now deleting; its resources go asynchronously",
        responses=error_responses(400, 401, 403, 404, 409, 503),
    )
    async def delete_proxy(
        self,
        proxy_id: ProxyIdParam,
        proxy_service: NamedDependency[ProxyService],
        force: Annotated[
            bool, Parameter(description="Delete even when leased (revokes the lease).")
        ] = False,
    ) -> ProxyOut:
        """Start deleting a proxy (202). 409 when it is leased, unless force=true.

        Idempotent: deleting a proxy that is already deleting or deleted answers 202 with
        its current state (a deleting proxy gets its delete intent sent again).
        """
        return ProxyOut.of(await proxy_service.delete(proxy_id, force=force))

    @post(
        "/{proxy_id:str}/quarantine",
        status_code=HTTP_200_OK,
        responses=error_responses(400, 401, 403, 404, 413, 503),
    )
    async def quarantine_proxy(
        self,
        proxy_id: ProxyIdParam,
        data: JSONInput[Quarantine],
        proxy_service: NamedDependency[ProxyService],
        request: Caller,
    ) -> ProxyOut:
        """Set the proxy aside for inspection: never granted (a lease it has runs on to
        its end), never deleted by its pool, which replaces it in its count. Idempotent:
        a quarantined proxy keeps its first reason. Undo with DELETE."""
        body = strict(data, Quarantine)
        proxy = await proxy_service.quarantine(proxy_id, body.reason, caller=request.user.name)
        return ProxyOut.of(proxy)

    @delete(
        "/{proxy_id:str}/quarantine",
        status_code=HTTP_200_OK,
        responses=error_responses(400, 401, 403, 404, 409, 503),
    )
    async def release_proxy(
        self,
        proxy_id: ProxyIdParam,
        proxy_service: NamedDependency[ProxyService],
        request: Caller,
    ) -> ProxyOut:
        """Put a quarantined proxy back in rotation: grantable again once ready and past
        its cooldown. 409 `proxy_not_quarantined` when it is not quarantined."""
        return ProxyOut.of(await proxy_service.release(proxy_id, caller=request.user.name))
