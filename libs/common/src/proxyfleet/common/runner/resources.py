"""Core NATS request/reply: "which resources do you manage?" (asked by the GC service).

Replicas share a queue group, so each request gets one answer.
"""

from __future__ import annotations

import time

import msgspec
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from proxyfleet.common import subjects
from proxyfleet.common.errors import ProviderError
from proxyfleet.common.logging import get_logger
from proxyfleet.common.metrics import MESSAGE_SECONDS, MESSAGES
from proxyfleet.common.models import ResourceList
from proxyfleet.common.provider import Provider
from proxyfleet.common.runner.calls import timed_call

log = get_logger("proxyfleet.runner")

_encoder = msgspec.json.Encoder()
KIND = "resources"


class ResourcesResponder:
    def __init__(self, nc: NatsClient, provider: Provider, provider_name: str) -> None:
        self._nc = nc
        self._provider = provider
        self._name = provider_name
        self._sub: Subscription | None = None

    async def start(self) -> None:
        self._sub = await self._nc.subscribe(
            subjects.resources_request(self._name),
            queue=subjects.provisioner_durable(self._name),
            cb=self._answer,
        )

    async def stop(self) -> None:
        if self._sub is not None:
            await self._sub.unsubscribe()
            self._sub = None

    async def answer(self) -> ResourceList:
        """The provider's managed resources, or the provider's error text."""
        try:
            found = await timed_call(self._name, "list", self._provider.list_managed())
        except ProviderError as exc:
            log.warning("listing managed resources failed", error=str(exc))
            return ResourceList(provider=self._name, resources=[], error=str(exc) or "error")
        except Exception as exc:  # an adapter bug must still get the asker an answer
            log.exception("listing managed resources failed")
            return ResourceList(provider=self._name, resources=[], error=f"internal error: {exc}")
        return ResourceList(provider=self._name, resources=found)

    async def _answer(self, msg: Msg) -> None:
        started = time.perf_counter()
        body = await self.answer()
        MESSAGE_SECONDS.labels(KIND).observe(time.perf_counter() - started)
        MESSAGES.labels(KIND, "error" if body.error else "ok").inc()
        if msg.reply:
            await msg.respond(_encoder.encode(body))
