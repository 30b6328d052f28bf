"""EVALSHA over one Redis connection, pipelined across every concurrent caller.

redis-py takes a pooled connection per call, so 64 concurrent requests mean 64 sockets,
64 writes and 64 reads a round. ScriptMux queues the commands of one event-loop turn and
writes them in one go on a single connection; Redis answers in order, and the replies
(parsed by hiredis) resolve the callers' futures in that order. Each script still runs
atomically in Redis: only the transport is shared. No retries: a call cut by a lost
connection raises StoreUnavailable (the API answers 503) and the next call reconnects;
a dataset still loading (LOADING) raises it too.

With `replicas` (ReplicaWait), every batch ends with one `WAIT`: a script's reply is given
to its caller only once that many replicas have its writes, so what was acknowledged
survives the primary's loss (docs/decisions/store.md, R10). One WAIT covers the whole batch.
"""

from __future__ import annotations

import asyncio
import hashlib
import ssl
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import hiredis
import redis.asyncio as aioredis
from redis.asyncio.connection import SSLConnection
from redis.asyncio.sentinel import SentinelConnectionPool
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError

from proxyfleet.common.core.errors import StoreUnavailable
from proxyfleet.common.core.settings import CommonSettings
from proxyfleet.common.store.outage import unavailable as _lost

Arg = str | bytes | int | float
Locate = Callable[[], Awaitable[tuple[str, int]]]
"""Where the primary is now (asked again at each connect: Sentinel's answer)."""


@dataclass(frozen=True, slots=True)
class ReplicaWait:
    """Replicas that must hold a script's writes before its reply is given (WAIT)."""

    replicas: int
    timeout: float
    """Seconds Redis waits for them (WAIT's timeout)."""

    @classmethod
    def of(cls, common: CommonSettings) -> ReplicaWait | None:
        """The settings' wait (None: --redis-wait-replicas 0)."""
        if not common.redis_wait_replicas:
            return None
        return cls(common.redis_wait_replicas, common.redis_wait_timeout)


class Unreplicated(StoreUnavailable):
    """The replicas did not confirm the writes in time: they were made on the primary but
    could be lost with it, so they are not acknowledged (a lease so made expires unused)."""

    code = "store_unreplicated"


class LuaScript:
    """A script's source and its SHA1 (what EVALSHA names it by)."""

    __slots__ = ("sha", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest()


def encode_command(*args: Arg) -> bytes:
    """A command in RESP (an array of bulk strings), packed by hiredis (a float as its
    repr, as redis-py writes it)."""
    return cast(bytes, hiredis.pack_command(cast(Any, args)))  # its stub types one item


class _Protocol(asyncio.Protocol):
    """One connection: commands queued during a loop turn go out in one write."""

    def __init__(self, wait: ReplicaWait | None = None) -> None:
        self.reader = hiredis.Reader(encoding="utf-8", replyError=ResponseError)
        self.waiters: deque[asyncio.Future[Any]] = deque()
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self._out: list[bytes] = []
        self._wait = wait
        self._barrier: asyncio.Future[Any] | None = None

    def barrier(self) -> asyncio.Future[Any]:
        """The WAIT that ends the batch being queued (the caller sent into it first): its
        reply is the number of replicas that hold the batch's writes."""
        if self.lost:  # the send failed at once: no batch goes out to end with a WAIT
            lost: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            lost.set_exception(_lost("Redis connection lost"))
            return lost
        if self._barrier is None:
            self._barrier = asyncio.get_running_loop().create_future()
        return self._barrier

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is no subclass

    def send(self, command: bytes) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        if self.lost:
            future.set_exception(_lost("Redis connection lost"))
            return future
        self.waiters.append(future)
        if not self._out:
            loop.call_soon(self._flush)
        self._out.append(command)
        return future

    def _flush(self) -> None:
        barrier, self._barrier = self._barrier, None
        if barrier is not None and self._wait is not None:
            millis = max(1, round(self._wait.timeout * 1000))
            self._out.append(encode_command("WAIT", self._wait.replicas, millis))
            if self.lost:
                barrier.set_exception(_lost("Redis connection lost"))
            else:
                self.waiters.append(barrier)  # answered after every command of the batch
        data, self._out = b"".join(self._out), []
        if self.transport is not None and not self.lost:
            self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        while (reply := self.reader.gets()) is not False:
            waiter = self.waiters.popleft()
            readonly = isinstance(reply, ResponseError) and str(reply).startswith("READONLY")
            if readonly and not self.lost:
                # The primary became a replica (a failover): the next call reconnects, to
                # the new primary when the address comes from Sentinel.
                self.lost = True
                if self.transport is not None:
                    self.transport.close()
            if waiter.done():
                continue
            if isinstance(reply, ResponseError):
                text = str(reply)
                error: Exception = reply
                if text.startswith("NOSCRIPT"):
                    error = NoScriptError(text)
                elif text.startswith("LOADING"):
                    error = _lost(f"Redis is loading its dataset: {text}")
                elif readonly:
                    error = _lost(f"Redis is a replica now: {text}")
                waiter.set_exception(error)
            else:
                waiter.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_exception(_lost(f"Redis connection lost: {exc!r}"))


class ScriptMux:
    def __init__(
        self,
        host: str,
        port: int,
        *,
        db: int = 0,
        username: str | None = None,
        password: str | None = None,
        wait: ReplicaWait | None = None,
        locate: Locate | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        """`wait`: replicas every script's writes must reach before its reply is given.
        `locate`: where the primary is, asked at each (re)connect instead of host:port.
        `tls`: connect with TLS (rediss://)."""
        self._addr = (host, port)
        self._locate = locate
        self._tls = tls
        self._wait = wait if wait is not None and wait.replicas > 0 else None
        self._setup = [encode_command("SELECT", db)] if db else []
        if password:
            auth = ("AUTH", username, password) if username else ("AUTH", password)
            self._setup.insert(0, encode_command(*auth))
        self._proto: _Protocol | None = None
        self._connecting = asyncio.Lock()

    @classmethod
    def from_client(cls, client: aioredis.Redis, wait: ReplicaWait | None = None) -> ScriptMux:
        """The server (and database, credentials) a redis-py client talks to, over TCP;
        through Sentinel, the primary it names at each connect."""
        pool = client.connection_pool
        kw = pool.connection_kwargs
        locate: Locate | None = None
        if isinstance(pool, SentinelConnectionPool):
            ask = cast(Locate, pool.get_master_address)  # redis-py leaves it untyped

            async def primary() -> tuple[str, int]:
                host, port = await ask()
                return str(host), int(port)

            locate = primary
        return cls(
            str(kw.get("host", "localhost")),
            int(kw.get("port", 6379)),
            db=int(kw.get("db", 0) or 0),
            username=kw.get("username"),
            password=kw.get("password"),
            wait=wait,
            locate=locate,
            tls=_tls_context(client),
        )

    async def _connected(self) -> _Protocol:
        proto = self._proto
        if proto is not None and not proto.lost:
            return proto
        async with self._connecting:
            if self._proto is None or self._proto.lost:
                loop = asyncio.get_running_loop()
                try:
                    if self._locate is not None:
                        self._addr = await self._locate()
                    wait = self._wait
                    _, new = await loop.create_connection(
                        lambda: _Protocol(wait), *self._addr, ssl=self._tls
                    )
                # ssl.SSLError is an OSError (a certificate not trusted)
                except (OSError, RedisConnectionError) as exc:
                    msg = f"cannot reach Redis at {self._addr}: {exc}"
                    raise _lost(msg) from exc
                # AUTH/SELECT queued before anyone else can send on the connection
                setup = [new.send(command) for command in self._setup]
                self._proto = new
                await asyncio.gather(*setup)
            return self._proto

    async def command(self, *args: Arg) -> Any:
        proto = await self._connected()
        return await proto.send(encode_command(*args))

    async def _replicated(self, *args: Arg) -> Any:
        """command(), its reply given once the replicas hold what it wrote (with `wait`)."""
        proto = await self._connected()
        reply = proto.send(encode_command(*args))
        if self._wait is None:
            return await reply
        barrier = proto.barrier()
        try:
            result = await reply
        finally:
            held = await barrier
        if int(held) < self._wait.replicas:
            raise Unreplicated(
                f"{held} of {self._wait.replicas} Redis replicas confirmed the write within"
                f" {self._wait.timeout:g} s: not acknowledged, as a failover could lose it"
            )
        return result

    async def run(self, script: LuaScript, keys: Sequence[Arg], args: Sequence[Arg]) -> Any:
        """EVALSHA; EVAL once when Redis does not know the script yet (which caches it)."""
        try:
            return await self._replicated("EVALSHA", script.sha, len(keys), *keys, *args)
        except NoScriptError:
            return await self._replicated("EVAL", script.source, len(keys), *keys, *args)

    async def aclose(self) -> None:
        proto, self._proto = self._proto, None
        if proto is not None and proto.transport is not None:
            proto.transport.close()


def _tls_context(client: aioredis.Redis) -> ssl.SSLContext | None:
    """The TLS context the client's own connections use (rediss://: its CA, certificate
    checks and client certificate), built by redis-py from the same settings."""
    pool = client.connection_pool
    if not issubclass(pool.connection_class, SSLConnection):
        return None
    connection = pool.connection_class(**pool.connection_kwargs)  # no I/O until connect
    assert isinstance(connection, SSLConnection)
    return connection.ssl_context.get()
