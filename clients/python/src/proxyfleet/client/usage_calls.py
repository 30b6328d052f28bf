"""GET /v1/usage: a client token's bytes and connections through the gateways per UTC day
(its own; an admin token: any client's). Pure, like `calls`."""

from __future__ import annotations

import msgspec

from proxyfleet.client.calls import Call, Param


class DayUsage(msgspec.Struct, kw_only=True):
    day: str
    """YYYY-MM-DD, UTC."""
    bytes_up: int
    bytes_down: int
    connections: int


class Usage(msgspec.Struct, kw_only=True):
    client: str
    days: list[DayUsage]
    """Oldest first, today (UTC) last."""
    bytes_up: int
    bytes_down: int
    connections: int
    """The sums over `days`."""


def get_usage(client: str | None = None, days: int = 7) -> Call[Usage]:
    params: list[Param] = [("days", days)]
    if client:
        params.append(("client", client))
    return Call("GET", "/v1/usage", Usage, params=params)
