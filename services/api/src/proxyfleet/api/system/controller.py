"""GET /healthz, /readyz and /metrics (no token: probes and Prometheus scrape these)."""

from __future__ import annotations

import contextlib

import msgspec
from litestar import Controller, Response, get
from litestar.datastructures import State
from litestar.openapi.datastructures import ResponseSpec
from litestar.status_codes import HTTP_200_OK, HTTP_503_SERVICE_UNAVAILABLE

from proxyfleet.api.container import NOT_YET, maybe_services
from proxyfleet.api.metrics import REGISTRY_PROXIES
from proxyfleet.common.core.errors import StoreUnavailable
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.observability.metrics import render_metrics

log = get_logger(__name__)


def _not_ready(body: Readiness, message: str) -> Response[Readiness]:
    body.error, body.message = "not_ready", message
    return Response(body, status_code=HTTP_503_SERVICE_UNAVAILABLE)


class Health(msgspec.Struct, kw_only=True):
    status: str


class Readiness(msgspec.Struct, kw_only=True):
    status: str
    """ready, or not_ready."""
    redis: bool
    nats: bool
    outbox: bool
    """The outbox relay reads the outbox and publishes it (events and intents go out)."""
    outbox_length: int = 0
    """Events and intents written and not yet published (they wait while NATS is away)."""
    outbox_oldest_age: float = 0.0
    """Seconds since the oldest of them was written (0 when there is none)."""
    error: str = ""
    message: str = ""


class SystemController(Controller):
    path = "/"
    tags = ["system"]

    @get("/healthz")
    async def healthz(self) -> Health:
        """The process is alive (nothing else is checked)."""
        return Health(status="ok")

    @get(
        "/readyz",
        responses={
            503: ResponseSpec(
                data_container=Readiness, description="not ready", generate_examples=False
            )
        },
    )
    async def readyz(self, state: State) -> Response[Readiness]:
        """Redis answers PING, NATS is connected and the outbox relay runs; else 503. The
        outbox's backlog is part of the answer either way."""
        services = maybe_services(state)
        if services is None:
            return _not_ready(
                Readiness(status="not_ready", redis=False, nats=False, outbox=False), NOT_YET
            )
        backends = services.backends
        redis_ok = await backends.redis_ready()
        nats_ok = backends.nats_ready()
        outbox_ok = await backends.relay.ready()
        body = Readiness(status="ready", redis=redis_ok, nats=nats_ok, outbox=outbox_ok)
        if redis_ok:
            with contextlib.suppress(StoreUnavailable):
                backlog = await backends.relay.backlog()
                body.outbox_length = backlog.length
                body.outbox_oldest_age = round(backlog.oldest_age, 3)
        checks = (("redis", redis_ok), ("nats", nats_ok), ("outbox", outbox_ok))
        if all(ok for _, ok in checks):
            return Response(body)
        down = [name for name, ok in checks if not ok]
        body.status = "not_ready"
        return _not_ready(body, f"not reachable: {', '.join(down)}")

    @get("/metrics", include_in_schema=False, status_code=HTTP_200_OK)
    async def metrics(self, state: State) -> Response[bytes]:
        """Prometheus exposition of every proxyfleet metric of this process."""
        services = maybe_services(state)
        try:
            counts_by_provider = await services.providers.counts() if services else {}
            for name, counts in counts_by_provider.items():
                for phase, n in counts.items():
                    REGISTRY_PROXIES.labels(name, phase.value).set(n)
        except StoreUnavailable as exc:
            log.warning("api.registry_counts_unavailable", error=str(exc))
        body, content_type = render_metrics()
        return Response(body, media_type=content_type)
