"""GET /v1/events (client scope): the live event stream as server-sent events."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, get
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.params import QueryParameter
from litestar.response import Stream

from proxyfleet.api.container import Services
from proxyfleet.api.feed.filters import FeedFilter, parse_types
from proxyfleet.api.feed.stream import StreamRequest, event_stream, event_streams_of
from proxyfleet.api.http.auth import Principal, Scope
from proxyfleet.api.http.errors import error_responses
from proxyfleet.common.core.errors import TemporaryError

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
"""No cache may keep it and no reverse proxy (nginx) may buffer it."""


class FeedController(Controller):
    path = "/events"
    tags = ["events"]
    opt = {"scope": Scope.CLIENT}

    @get(
        "/",
        media_type="text/event-stream",
        response_description=(
            "Server-sent events: first `ready` (the subscription is live), then one message "
            "per event (`id`: the event id, `event`: its type, `data`: the event as JSON, as "
            "on NATS), `probe` messages when asked, `gap` when a slow reader lost messages, "
            "and `: keep-alive` comments while idle"
        ),
        responses=error_responses(400, 401, 403, 503),
    )
    async def stream_events(
        self,
        services: NamedDependency[Services],
        state: State,
        request: Request[Principal, Any, Any],
        type_: Annotated[
            list[str] | None,
            QueryParameter(
                name="type",
                description="Event type (proxy.ready) or family (proxy, lease); repeatable. "
                "Default: every event.",
            ),
        ] = None,
        proxy_id: Annotated[
            str | None, QueryParameter(max_length=64, description="Only this proxy's events.")
        ] = None,
        probes: Annotated[
            bool,
            QueryParameter(description="Also every health probe result (`probe` messages)."),
        ] = False,
    ) -> Stream:
        """Follow what happens in the fleet, live, until the client disconnects. A client
        token sees every proxy event and the lease events of its own leases; an admin
        token every event. Events from before the stream opened are not replayed."""
        req = StreamRequest(
            caller=request.user,
            filter=FeedFilter(parse_types(type_), proxy_id or ""),
            probes=probes,
        )
        streams = event_streams_of(state)
        backends = services.backends
        if streams.closed or not backends.nats.is_connected:
            # before the 200: a stream that cannot follow NATS is an error, not a silence
            raise TemporaryError("the API is not connected to NATS", retry_after=1.0)
        return Stream(
            event_stream(backends.nats, backends.leases, streams, req),
            media_type="text/event-stream",
            headers=SSE_HEADERS,
        )
