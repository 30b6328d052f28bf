"""What each relay carried, as it ends: counted against its client's day (`quota`), and in
the per-client and per-provider/zone byte counters. The counters are added to in a batch
(`flush`, at each limits sync), not per relay: a Prometheus increment takes a lock, and a
relay's end is on every tunnel's path."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TypeVar

from proxyfleet.gateway.metrics import CLIENT_BYTES, PROXY_BYTES
from proxyfleet.gateway.quota import Quota
from proxyfleet.gateway.tunnels import Hold

K = TypeVar("K", bound=Hashable)


class Accounting:
    def __init__(self, quota: Quota) -> None:
        self._quota = quota
        self._clients: dict[str, list[int]] = {}
        self._zones: dict[tuple[str, str], list[int]] = {}
        """Bytes up and down since the last flush."""

    def relayed(self, hold: Hold, up: int, down: int) -> None:
        self._quota.relayed(hold.owner, up, down)
        _add(self._clients, hold.owner, up, down)
        _add(self._zones, (hold.proxy.provider, hold.proxy.zone), up, down)

    def flush(self) -> None:
        """Add what was relayed since the last flush to the counters."""
        clients, self._clients = self._clients, {}
        zones, self._zones = self._zones, {}
        for client, (up, down) in clients.items():
            CLIENT_BYTES.labels(client, "up").inc(up)
            CLIENT_BYTES.labels(client, "down").inc(down)
        for (provider, zone), (up, down) in zones.items():
            PROXY_BYTES.labels(provider, zone, "up").inc(up)
            PROXY_BYTES.labels(provider, zone, "down").inc(down)


def _add(into: dict[K, list[int]], key: K, up: int, down: int) -> None:
    pair = into.get(key)
    if pair is None:
        into[key] = [up, down]
    else:
        pair[0] += up
        pair[1] += down
