"""GET /healthz, /readyz and /metrics (no token: probes and Prometheus scrape these)."""

from __future__ import annotations

import msgspec
from litestar import Controller, Response, get
from litestar.di import NamedDependency
from litestar.openapi.datastructures import ResponseSpec
from litestar.status_codes import HTTP_200_OK, HTTP_503_SERVICE_UNAVAILABLE

from proxyfleet.api.container import Services
from proxyfleet.api.metrics import REGISTRY_PROXIES
from proxyfleet.common.errors import StoreUnavailable
from proxyfleet.common.logging import get_logger
from proxyfleet.common.metrics import render_metrics

log = get_logger(__name__)


class Health(msgspec.Struct, kw_only=True):
    status: str


class Readiness(msgspec.Struct, kw_only=True):
    status: str
    """ready, or not_ready."""
    redis: bool
    nats: bool
    outbox: bool
    """The outbox relay reads the outbox and publishes it (events and intents go out)."""
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
        "/readyz", responses={503: ResponseSpec(data_container=Readiness, description="not ready")}
    )
    async def readyz(self, services: NamedDependency[Services]) -> Response[Readiness]:
        """Redis answers PING, NATS is connected and the outbox relay runs; else 503."""
        backends = services.backends
        redis_ok = await backends.redis_ready()
        nats_ok = backends.nats_ready()
        outbox_ok = await backends.relay.ready()
        checks = (("redis", redis_ok), ("nats", nats_ok), ("outbox", outbox_ok))
        if all(ok for _, ok in checks):
            return Response(Readiness(status="ready", redis=True, nats=True, outbox=True))
        down = [name for name, ok in checks if not ok]
        return Response(
            Readiness(
                status="not_ready",
                redis=redis_ok,
                nats=nats_ok,
                outbox=outbox_ok,
                error="not_ready",
                message=f"not reachable: {', '.join(down)}",
            ),
            status_code=HTTP_503_SERVICE_UNAVAILABLE,
        )

    @get("/metrics", include_in_schema=False, status_code=HTTP_200_OK)
    async def metrics(self, services: NamedDependency[Services]) -> Response[bytes]:
        """Prometheus exposition of every proxyfleet metric of this process."""
        try:
            for name, counts in (await services.providers.counts()).items():
                for phase, n in counts.items():
                    REGISTRY_PROXIES.labels(name, phase.value).set(n)
        except StoreUnavailable as exc:
            log.warning("api.registry_counts_unavailable", error=str(exc))
        body, content_type = render_metrics()
        return Response(body, media_type=content_type)
