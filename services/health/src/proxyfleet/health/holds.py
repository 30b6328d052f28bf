"""Holding unhealthy timeouts: no proxy is failed for --unhealthy-timeout while most of its
provider is unhealthy (a target or network outage, not that many dead proxies, is then the
likelier cause; `lifecycle.may_fail_unhealthy`)."""

from __future__ import annotations

from proxyfleet.common.domain.lifecycle import may_fail_unhealthy
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Phase
from proxyfleet.health import metrics

log = get_logger("proxyfleet.health.worker")


class TimeoutHolds:
    def __init__(self, registry: ProxyRegistry, max_share: float) -> None:
        self._registry = registry
        self._max_share = max_share
        self._holding: set[str] = set()  # providers whose unhealthy timeouts are held

    async def may_time_out(self, provider: str, seen: dict[str, bool]) -> bool:
        """Whether `provider`'s unhealthy proxies may be failed for their timeout now; its
        proxies by phase are read once per batch (`seen`). Counts every hold, and logs
        when a provider's holds begin and end."""
        share = self._max_share
        if provider not in seen:
            counts = {} if share >= 1 else await self._registry.count_by_phase(provider)
            seen[provider] = allowed = share >= 1 or may_fail_unhealthy(counts, share)
            if not allowed and provider not in self._holding:
                self._holding.add(provider)
                log.warning(
                    "health.unhealthy_timeout_held",
                    provider=provider,
                    unhealthy=counts[Phase.UNHEALTHY],
                    ready=counts[Phase.READY],
                    max_share=share,
                )
            elif allowed and provider in self._holding:
                self._holding.discard(provider)
                log.info("health.unhealthy_timeout_resumed", provider=provider)
        if not seen[provider]:
            metrics.UNHEALTHY_TIMEOUTS_HELD.labels(provider=provider).inc()
        return seen[provider]
