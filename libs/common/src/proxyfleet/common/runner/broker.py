"""A FastStream NATS broker on the connection the process already holds.

A provisioner keeps one NATS connection (endless reconnects, `connect_nats`) for its
publisher, its reconciler and its subscribers; the broker subscribes and replies through
it and leaves draining it to whoever made it.
"""

from __future__ import annotations

import logging
from types import TracebackType

from faststream.nats import NatsBroker
from nats.aio.client import Client as NatsClient

# FastStream logs every message at `log_level` (DEBUG here) and its task supervision at
# INFO; only its warnings and errors belong in the service log, the runner logs what it
# does with each intent itself.
_faststream_log = logging.getLogger("proxyfleet.faststream")
_faststream_log.setLevel(logging.WARNING)


class ConnectedNatsBroker(NatsBroker):
    """`NatsBroker` whose `start` uses `nc` instead of opening a connection, and whose
    `stop` stops its subscribers without draining `nc`.

    It overrides `_connect` and clears `_connection`, which FastStream 0.7 uses for
    exactly this (libs/common pins `<0.8`; tests/provisioner checks `nc` stays open).
    """

    def __init__(self, nc: NatsClient, *, graceful_timeout: float | None = None) -> None:
        super().__init__(
            graceful_timeout=graceful_timeout,
            logger=_faststream_log,
            log_level=logging.DEBUG,
        )
        self._given = nc

    async def _connect(self) -> NatsClient:
        self.config.connect(self._given)
        return self._given

    async def stop(
        self,
        exc_type: type[BaseException] | None = None,
        exc_val: BaseException | None = None,
        exc_tb: TracebackType | None = None,
    ) -> None:
        # NatsBroker.stop drains the connection it holds; this one belongs to the caller.
        self._connection = None
        await super().stop(exc_type, exc_val, exc_tb)
