"""/v1/usage (client scope): a client token's bytes and connections through the gateways,
per UTC day, from what the gateway replicas sync to Redis (`ClientUsageStore`)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, get
from litestar.di import NamedDependency
from litestar.exceptions import PermissionDeniedException
from litestar.params import Parameter

from proxyfleet.api.container import Services
from proxyfleet.api.http.auth import Principal, Scope
from proxyfleet.api.http.errors import error_responses

Caller = Request[Principal, Any, Any]
MAX_DAYS = 400
"""As many days as Redis keeps (USAGE_DAYS)."""


class DayOut(msgspec.Struct, kw_only=True):
    day: str
    """YYYY-MM-DD, UTC."""
    bytes_up: int
    """Bytes from the client's connections to the upstreams."""
    bytes_down: int
    """Bytes back to the client."""
    connections: int
    """Connections the gateways accepted for it (refused ones not counted)."""


class UsageOut(msgspec.Struct, kw_only=True):
    client: str
    days: list[DayOut]
    """Oldest first, today (UTC) last; a day without traffic has zeros."""
    bytes_up: int
    bytes_down: int
    connections: int
    """The sums over `days`."""


class UsageController(Controller):
    path = "/usage"
    tags = ["usage"]
    opt = {"scope": Scope.CLIENT}

    @get("/", responses=error_responses(400, 401, 403, 503))
    async def get_usage(
        self,
        services: NamedDependency[Services],
        request: Caller,
        client: Annotated[
            str | None,
            Parameter(
                max_length=64,
                description="The token name (an admin token: any; a client token: its own, "
                "the default).",
            ),
        ] = None,
        days: Annotated[int, Parameter(ge=1, le=MAX_DAYS, description="Days up to today.")] = 7,
    ) -> UsageOut:
        """A client token's bytes and connections through the gateways per UTC day. The
        gateways send their counts every fraction of a second, so today's last moments may
        be missing."""
        principal = request.user
        name = client or principal.name
        if not principal.is_admin and name != principal.name:
            raise PermissionDeniedException("a client token reads its own usage only")
        rows = await services.backends.usage.recent(name, days)
        out = [DayOut(day=r.day, bytes_up=r.bytes_up, bytes_down=r.bytes_down,
                      connections=r.connections) for r in rows]  # fmt: skip
        return UsageOut(
            client=name,
            days=out,
            bytes_up=sum(d.bytes_up for d in out),
            bytes_down=sum(d.bytes_down for d in out),
            connections=sum(d.connections for d in out),
        )
