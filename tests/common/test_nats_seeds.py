"""A NATS URL may name several servers (a cluster's seeds): a service connects through
whichever answers, and says which were tried when none does."""

from __future__ import annotations

import pytest

from proxyfleet.common.core.errors import MessagingUnavailable
from proxyfleet.common.messaging.jetstream import connect_nats
from proxyfleet.devstack.servers import free_port


async def test_a_dead_seed_is_skipped(nats_url: str) -> None:
    dead = f"nats://127.0.0.1:{free_port()}"
    for url in (f"{dead},{nats_url}", f"{nats_url}, {dead}"):
        nc = await connect_nats(url, "seeds-test")
        try:
            assert nc.is_connected
            assert nc.connected_url is not None
            assert nc.connected_url.port == int(nats_url.rsplit(":", 1)[1])
        finally:
            await nc.close()


async def test_no_seed_answering_is_unavailable() -> None:
    dead = [f"nats://127.0.0.1:{free_port()}" for _ in range(2)]
    with pytest.raises(MessagingUnavailable, match="unavailable"):
        await connect_nats(",".join(dead), "seeds-test")
