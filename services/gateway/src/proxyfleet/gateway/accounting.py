"""What each relay carried, as it ends: counted against its client's day (`quota`), in
the per-client and per-provider/zone byte counters, and on its lease (recorded when the
lease is released)."""

from __future__ import annotations

from prometheus_client import Counter

from proxyfleet.gateway.metrics import CLIENT_BYTES, PROXY_BYTES
from proxyfleet.gateway.quota import Quota
from proxyfleet.gateway.tunnels import Hold

_Pair = tuple[Counter, Counter]


class Accounting:
    def __init__(self, quota: Quota) -> None:
        self._quota = quota
        # The counters' children, looked up once per label set (a relay's end is hot).
        self._clients: dict[str, _Pair] = {}
        self._zones: dict[tuple[str, str], _Pair] = {}

    def relayed(self, hold: Hold, up: int, down: int) -> None:
        self._quota.relayed(hold.owner, up, down)
        pair = self._clients.get(hold.owner)
        if pair is None:
            pair = self._clients[hold.owner] = (
                CLIENT_BYTES.labels(hold.owner, "up"), CLIENT_BYTES.labels(hold.owner, "down"),
            )  # fmt: skip
        pair[0].inc(up)
        pair[1].inc(down)
        zone = (hold.proxy.provider, hold.proxy.zone)
        pair = self._zones.get(zone)
        if pair is None:
            pair = self._zones[zone] = (
                PROXY_BYTES.labels(*zone, "up"), PROXY_BYTES.labels(*zone, "down"),
            )  # fmt: skip
        pair[0].inc(up)
        pair[1].inc(down)
