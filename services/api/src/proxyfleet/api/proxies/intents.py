"""Intents the API publishes outside a state change.

Events and the intents a change implies go through the store's outbox (the script that
writes appends them; the relay publishes them). What is left here is asking again for the
delete of a proxy already deleting: no state changes, so nothing goes to the outbox, and a
message NATS cannot take only delays the delete (the provisioner's reconciler republishes
it). Each failure is logged and counted (proxyfleet_api_publish_failures_total).
"""

from __future__ import annotations

from proxyfleet.api.metrics import PUBLISH_FAILURES
from proxyfleet.common.core.errors import MessagingUnavailable
from proxyfleet.common.messaging.jetstream import Publisher
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.wire.models import DeleteIntent

log = get_logger(__name__)


class Messages:
    """Publisher calls that never fail the request that made them."""

    def __init__(self, publisher: Publisher) -> None:
        self._publisher = publisher

    async def delete(self, provider: str, proxy_id: str, gen: int, reason: str = "") -> bool:
        """The delete intent again, under the dedupe key its first copy had."""
        intent = DeleteIntent(proxy_id=proxy_id, reason=reason)
        try:
            await self._publisher.intent(provider, intent, dedupe_key=f"{proxy_id}:delete:{gen}")
        except MessagingUnavailable as exc:
            PUBLISH_FAILURES.labels("intent").inc()
            log.warning("api.intent_not_published", proxy_id=proxy_id, error=str(exc))
            return False
        return True
