"""/v1/leases (client scope)."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, delete, get, post
from litestar.di import NamedDependency
from litestar.params import HeaderParameter, Parameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED

from proxyfleet.api.http.auth import Principal, Scope
from proxyfleet.api.http.errors import error_responses
from proxyfleet.api.http.fields import JSONInput, strict
from proxyfleet.api.http.idempotency import MAX_KEY_CHARS
from proxyfleet.api.leases import answers
from proxyfleet.api.leases.schemas import (
    GrantedLease,
    GrantLease,
    LeaseOut,
    LeasePage,
    ReleasedLease,
    ReleaseLease,
    RenewedLease,
    RenewLease,
    ReportedLease,
    ReportLease,
)
from proxyfleet.api.leases.service import LeaseService
from proxyfleet.common.store.lease_pages import CURSOR_PATTERN as LEASE_CURSOR_PATTERN

LeaseIdParam = Annotated[str, Parameter(max_length=64, description="The lease id.")]
Caller = Request[Principal, Any, Any]
"""The request, for its `user`: the caller the auth guard identified."""
_ENDED = error_responses(400, 401, 403, 404, 409, 413, 503)
IdempotencyKey = Annotated[
    str | None,
    HeaderParameter(
        name="Idempotency-Key",
        max_length=MAX_KEY_CHARS,
        description=(
            "Makes a retried grant safe: a grant with a key seen before and the same body "
            "answers with the lease the first one made, as long as that lease is active (the "
            "key lives as long as the lease's first TTL). The same key with another body is "
            "a 409 (idempotency_key_reused); after its lease has ended, a 409 "
            "(idempotent_lease_ended). 1-255 visible ASCII characters, e.g. a UUID; keys "
            "are per token."
        ),
    ),
]


class LeaseController(Controller):
    path = "/leases"
    tags = ["leases"]
    opt = {"scope": Scope.CLIENT}

    @post(
        "/",
        status_code=HTTP_201_CREATED,
        response_description="The lease granted: its id, fencing epoch, expiry and proxy",
        responses=error_responses(400, 401, 403, 404, 409, 413, 503),
    )
    async def grant_lease(
        self,
        data: JSONInput[GrantLease],
        lease_service: NamedDependency[LeaseService],
        request: Caller,
        idempotency_key: IdempotencyKey = None,
    ) -> GrantedLease:
        """Lease a ready proxy: least recently used first among those matching the selector
        (provider, zone, labels, pool), not leased, not cooling down, not withheld (draining
        or quarantined) and not banned for the target. 503 + Retry-After when none is free;
        409 + Retry-After when the named proxy is taken; 404 for an unknown pool. A proxy
        whose exit address another lease holds (or that is cooling down) is skipped, by its
        provider's or pool's exclusivity (docs/egress.md); `distinct` keeps this client's
        leases on different exit networks. A ttl above the
        server's --max-lease-ttl is cut to it: `ttl` and `ttl_capped` say what was granted.
        See `Idempotency-Key` for safe retries."""
        return await answers.grant_lease(
            lease_service, strict(data, GrantLease), request.user, idempotency_key
        )

    @get("/{lease_id:str}", responses=error_responses(400, 401, 403, 404, 503))
    async def get_lease(
        self, lease_id: LeaseIdParam, lease_service: NamedDependency[LeaseService], request: Caller
    ) -> LeaseOut:
        """A lease and its state: active, released, expired or revoked. 404 for another
        client's lease (an admin token sees every lease)."""
        lease, state = await lease_service.get(lease_id, request.user)
        return LeaseOut.of(lease, state)

    @get("/", responses=error_responses(400, 401, 403, 503))
    async def list_leases(
        self,
        lease_service: NamedDependency[LeaseService],
        request: Caller,
        proxy_id: Annotated[
            str | None, Parameter(max_length=64, description="Only this proxy's lease.")
        ] = None,
        cursor: Annotated[
            str,
            Parameter(
                pattern=LEASE_CURSOR_PATTERN,
                description="The `next_cursor` of the previous page (a malformed one is a 400).",
            ),
        ] = "",
        limit: Annotated[int, Parameter(ge=1, le=500)] = 100,
    ) -> LeasePage:
        """One page of active leases, soonest expiry first; follow `next_cursor`. A client
        token lists its own leases, an admin token every lease. Not a snapshot: a lease
        renewed while the pages are read may show twice or not at all."""
        page = await lease_service.active(
            request.user, proxy_id=proxy_id or "", cursor=cursor, limit=limit
        )
        return LeasePage(
            items=[LeaseOut.of(lease, "active") for lease in page.items],
            next_cursor=page.next_cursor or None,
        )

    @post("/{lease_id:str}/renew", status_code=HTTP_200_OK, responses=_ENDED)
    async def renew_lease(
        self,
        lease_id: LeaseIdParam,
        data: JSONInput[RenewLease],
        lease_service: NamedDependency[LeaseService],
        request: Caller,
    ) -> RenewedLease:
        """Extend an active lease to now + ttl (cut to the server's --max-lease-ttl, as
        `ttl_capped` says). 409 for a stale epoch or an ended lease; 404 for another
        client's lease."""
        body = strict(data, RenewLease)
        ttl, capped = lease_service.granted_ttl(body.ttl)
        renewed = await lease_service.renew(lease_id, body.epoch, ttl, request.user)
        return RenewedLease(
            lease_id=lease_id,
            proxy_id=renewed.proxy_id,
            epoch=body.epoch,
            expires_at=renewed.expires_at,
            ttl=ttl,
            ttl_capped=capped,
        )

    @post("/{lease_id:str}/report", status_code=HTTP_200_OK, responses=_ENDED)
    async def report_lease(
        self,
        lease_id: LeaseIdParam,
        data: JSONInput[ReportLease],
        lease_service: NamedDependency[LeaseService],
        request: Caller,
    ) -> ReportedLease:
        """Record how the proxy did. 409 for a stale epoch or an ended lease; 404 for
        another client's lease."""
        body = strict(data, ReportLease)
        proxy_id, target = await lease_service.report(
            lease_id, body.epoch, body.outcome, body.target.lower(), request.user
        )
        return ReportedLease(
            lease_id=lease_id, proxy_id=proxy_id, outcome=body.outcome, target=target
        )

    @post("/{lease_id:str}/release", status_code=HTTP_200_OK, responses=_ENDED)
    async def release_lease(
        self,
        lease_id: LeaseIdParam,
        data: JSONInput[ReleaseLease],
        lease_service: NamedDependency[LeaseService],
        request: Caller,
    ) -> ReleasedLease:
        """End the lease; the proxy cools down before its next grant. 404 for another
        client's lease."""
        body = strict(data, ReleaseLease)
        return await answers.release_lease(lease_service, lease_id, body.epoch, request.user)

    @delete(
        "/{lease_id:str}",
        status_code=HTTP_200_OK,
        responses=error_responses(400, 401, 403, 404, 409, 503),
    )
    async def delete_lease(
        self,
        lease_id: LeaseIdParam,
        lease_service: NamedDependency[LeaseService],
        request: Caller,
        epoch: Annotated[int, Parameter(ge=1, le=2**53, description="The lease's epoch.")],
    ) -> ReleasedLease:
        """Same as POST /v1/leases/{lease_id}/release, with the epoch in the query."""
        return await answers.release_lease(lease_service, lease_id, epoch, request.user)
