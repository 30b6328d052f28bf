"""Core NATS request/reply, as a FastStream subscriber: "which resources do you manage?"
(asked by the GC service).

Replicas share a queue group, so each request gets one answer.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Annotated

import msgspec
from faststream.nats import NatsBroker
from nats.aio.client import Client as NatsClient
from pydantic import WithJsonSchema

from proxyfleet.common.core.errors import ProviderError
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.observability.metrics import MESSAGE_SECONDS, MESSAGES
from proxyfleet.common.providers.port import Provider
from proxyfleet.common.runner.broker import ConnectedNatsBroker
from proxyfleet.common.runner.calls import timed_call
from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.models import ResourceList
from proxyfleet.common.wire.schema import json_schema

log = get_logger("proxyfleet.runner")

_encoder = msgspec.json.Encoder()
KIND = "resources"

ResourcesReply = Annotated[bytes, WithJsonSchema(json_schema(ResourceList))]
"""The answer: a msgspec-encoded `ResourceList` (FastStream sends bytes as they are)."""

ResourcesAnswer = Callable[[], Awaitable[ResourcesReply]]

REQUEST_DESCRIPTION = (
    "GC asks one provider instance for the resources it manages (empty body). One "
    "provisioner replica of the queue group answers with a `ResourceList`; a listing "
    "error is answered too, with its text in `error`."
)


def subscribe_resources(broker: NatsBroker, provider_name: str, answer: ResourcesAnswer) -> None:
    """Declare the resources responder of `provider_name` on `broker`."""
    broker.subscriber(
        subjects.resources_request(provider_name),
        queue=subjects.provisioner_durable(provider_name),
        title=f"{subjects.resources_request(provider_name)}:provisioner",
        description=REQUEST_DESCRIPTION,
    )(answer)


class ResourcesResponder:
    def __init__(self, nc: NatsClient, provider: Provider, provider_name: str) -> None:
        self._nc = nc
        self._provider = provider
        self._name = provider_name
        self._broker: ConnectedNatsBroker | None = None

    async def start(self) -> None:
        broker = ConnectedNatsBroker(self._nc)
        subscribe_resources(broker, self._name, self._answer)
        await broker.start()
        self._broker = broker

    async def stop(self) -> None:
        if self._broker is not None:
            await self._broker.stop()
            self._broker = None

    async def answer(self) -> ResourceList:
        """The provider's managed resources, or the provider's error text."""
        try:
            found = await timed_call(self._name, "list", self._provider.list_managed())
        except ProviderError as exc:
            log.warning("resources.listing_failed", error=str(exc))
            return ResourceList(provider=self._name, resources=[], error=str(exc) or "error")
        except Exception as exc:  # an adapter bug must still get the asker an answer
            log.exception("resources.listing_failed")
            return ResourceList(provider=self._name, resources=[], error=f"internal error: {exc}")
        # GC needs no credentials: they stay with the provisioner (re-adoption reads them).
        blank = [msgspec.structs.replace(r, password="") if r.password else r for r in found]
        return ResourceList(provider=self._name, resources=blank)

    async def _answer(self) -> ResourcesReply:
        """FastStream sends the returned bytes to the request's reply subject."""
        started = time.perf_counter()
        body = await self.answer()
        MESSAGE_SECONDS.labels(KIND).observe(time.perf_counter() - started)
        MESSAGES.labels(KIND, "error" if body.error else "ok").inc()
        return _encoder.encode(body)
