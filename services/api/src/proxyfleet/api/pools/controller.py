"""/v1/pools (admin scope)."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Response, delete, get, patch, put
from litestar.di import NamedDependency
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import Body, Parameter, SkipValidation
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_202_ACCEPTED

from proxyfleet.api.http.auth import Scope
from proxyfleet.api.http.errors import error_responses
from proxyfleet.api.http.fields import JSONInput, strict
from proxyfleet.api.pools.patch import merge_patch
from proxyfleet.api.pools.schemas import KeptProxies, PoolList
from proxyfleet.api.pools.service import PoolService, spec_json
from proxyfleet.common.core.errors import InvalidInput
from proxyfleet.common.domain.pool_spec import PoolRecord, PoolSpec

MERGE_PATCH = "application/merge-patch+json"
PoolNameParam = Annotated[
    str,
    Parameter(
        pattern=r"^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$",
        max_length=63,
        description="The pool's name: 1-63 lowercase letters, digits and '-', starting "
        "with a letter and not ending with '-'.",
    ),
]
"""pool_spec.PoolName as a path parameter (a bad name is a 400)."""
SpecPatch = Annotated[
    SkipValidation[dict[str, Any]],
    Body(
        media_type=MERGE_PATCH,
        description="A JSON merge patch (RFC 7396) of the pool's spec (see PoolSpec): "
        'members given replace the spec\'s, objects merge ({"autoscale": {"max": 40}}), '
        "arrays are replaced whole, null removes a member. application/json is taken too.",
    ),
]


def pool_spec(name: str, data: object) -> PoolSpec:
    """A body as a PoolSpec, strictly: a 400 (invalid_pool) naming the field."""
    try:
        return strict(data, PoolSpec)
    except InvalidInput as exc:
        raise InvalidInput(f"pool {name}: {exc}", code="invalid_pool") from None


class PoolController(Controller):
    path = "/pools"
    tags = ["pools"]
    opt = {"scope": Scope.ADMIN}

    @get("/", responses=error_responses(401, 403, 503))
    async def list_pools(self, pool_service: NamedDependency[PoolService]) -> PoolList:
        """Every pool, oldest first, with its owner and its controller's last status."""
        return PoolList(items=await pool_service.all())

    @get("/{name:str}", responses=error_responses(400, 401, 403, 404, 503))
    async def get_pool(
        self, name: PoolNameParam, pool_service: NamedDependency[PoolService]
    ) -> PoolRecord:
        """One pool: its spec, owner, generation, desired size and status (ready, leased,
        free, draining, quarantined, surge, conditions, the last scaling decision)."""
        return await pool_service.get(name)

    @put(
        "/{name:str}",
        status_code=HTTP_200_OK,
        response_description="The pool, replaced or unchanged",
        responses={
            HTTP_201_CREATED: ResponseSpec(
                data_container=PoolRecord,
                description="The pool, created",
                generate_examples=False,
            ),
            **error_responses(400, 401, 403, 409, 413, 503),
        },
    )
    async def put_pool(
        self,
        name: PoolNameParam,
        data: JSONInput[PoolSpec],
        pool_service: NamedDependency[PoolService],
    ) -> Response[PoolRecord]:
        """Declare the pool or replace its spec (idempotent: the same spec changes
        nothing). 400 `invalid_pool` naming the field (an unknown provider or zone, a size
        above the providers' max_proxies, ...); 409 `pool_owned` when the config file or a
        ProxyPool resource declares it, `pool_deleting` while it is being deleted."""
        spec = pool_spec(name, data)
        applied = await pool_service.apply(name, spec)
        status = HTTP_201_CREATED if applied.created else HTTP_200_OK
        return Response(applied.pool, status_code=status)

    @patch("/{name:str}", responses=error_responses(400, 401, 403, 404, 409, 413, 503))
    async def patch_pool(
        self,
        name: PoolNameParam,
        data: SpecPatch,
        pool_service: NamedDependency[PoolService],
    ) -> PoolRecord:
        """Change part of the pool's spec with a JSON merge patch (`{"size": 20}`,
        `{"autoscale": {"max": 40}}`, null removes a key), checked as a PUT is. 409 when
        the pool changed meanwhile (try again), and as for PUT."""
        if not isinstance(data, dict):
            raise InvalidInput("request body: expected a JSON object (a merge patch)")
        pool = await pool_service.editable(name)
        spec = pool_spec(name, merge_patch(spec_json(pool.spec), data))
        return (await pool_service.apply(name, spec, expected_gen=pool.gen)).pool

    @delete(
        "/{name:str}",
        status_code=HTTP_202_ACCEPTED,
        responses={
            # Stated, not derived from the return type: that would say either body for 202.
            HTTP_202_ACCEPTED: ResponseSpec(
                data_container=PoolRecord,
                description="The pool, now deleting: its members drain, then go",
                generate_examples=False,
            ),
            HTTP_200_OK: ResponseSpec(
                data_container=KeptProxies,
                description="keep_proxies=true: the pool is gone, its members kept",
                generate_examples=False,
            ),
            **error_responses(400, 401, 403, 404, 409, 503),
        },
    )
    async def delete_pool(
        self,
        name: PoolNameParam,
        pool_service: NamedDependency[PoolService],
        keep_proxies: Annotated[
            bool,
            Parameter(
                description="Remove the pool now and keep its members as one-off proxies "
                "(no pool, no pool label) instead of draining and deleting them."
            ),
        ] = False,
    ) -> Response[PoolRecord | KeptProxies]:
        """Delete the pool (202): its controller drains its members (leases run to their
        end, or to the pool's drain_timeout), deletes them, then the pool. Idempotent
        while it is being deleted. 409 `pool_owned` when another source declares it."""
        pool = await pool_service.delete(name, keep_proxies=keep_proxies)
        if pool is None:
            return Response(KeptProxies(name=name), status_code=HTTP_200_OK)
        return Response(pool, status_code=HTTP_202_ACCEPTED)
