"""Redis outages leave the store as StoreUnavailable (503 with Retry-After at the API):
connection refused or lost, timeouts and LOADING (a Redis still reading its dataset after
a restart), through redis-py and through the API's ScriptMux alike."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from redis.exceptions import BusyLoadingError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.errors import StoreUnavailable
from proxyfleet.common.store import ProxyRegistry, ScriptMux, connect_redis
from proxyfleet.common.store.outage import RETRY_AFTER, translates_outages

LOADING = b"-LOADING Redis is loading the dataset in memory\r\n"


@translates_outages
class _Store:
    def __init__(self, error: Exception) -> None:
        self._error = error

    async def call(self) -> None:
        raise self._error


@pytest.mark.parametrize(
    "error",
    [
        BusyLoadingError("Redis is loading the dataset in memory"),
        RedisConnectionError("Error 111 connecting to 127.0.0.1:1. Connection refused."),
        RedisTimeoutError("Timeout reading from socket"),
        ConnectionResetError("reset by peer"),
    ],
)
async def test_each_outage_error_of_redis_py_becomes_store_unavailable(error: Exception) -> None:
    with pytest.raises(StoreUnavailable) as caught:
        await _Store(error).call()
    assert caught.value.retry_after == RETRY_AFTER
    assert caught.value.__cause__ is error


@pytest.fixture
async def loading_redis() -> AsyncIterator[int]:
    """A server on loopback that answers every command as a loading Redis does."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await reader.read(4096):
                writer.write(LOADING)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    async with server:
        yield int(server.sockets[0].getsockname()[1])


async def test_loading_through_redis_py_is_store_unavailable(loading_redis: int) -> None:
    client = connect_redis(f"redis://127.0.0.1:{loading_redis}/0")
    try:
        with pytest.raises(StoreUnavailable):
            await ProxyRegistry(client, ManualClock()).get("p1")
    finally:
        await client.aclose()


async def test_loading_through_the_script_mux_is_store_unavailable(loading_redis: int) -> None:
    mux = ScriptMux("127.0.0.1", loading_redis)
    try:
        with pytest.raises(StoreUnavailable, match="loading"):
            await mux.command("PING")
    finally:
        await mux.aclose()
