"""Code and loopback ports in the KVM tests' network namespace (`LibvirtDaemon.netns`).

A network namespace belongs to a thread, not to a process: `run_in` starts a thread that
enters the namespace, and whatever it starts (threads, processes, an event loop of its
own) is in there too. A socket keeps the namespace it was made in, wherever it is used
afterwards: `forward_into` makes its listening socket in the namespace and serves it on the
caller's event loop, connecting out from this side.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import socket
import threading
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

T = TypeVar("T")

_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def enter(path: str) -> None:
    """Move the calling thread, and only it, into the network namespace at `path`."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if _libc.setns(fd, _CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, os.strerror(errno), path)
    finally:
        os.close(fd)


def call_in(path: str, fn: Callable[[], T]) -> T:
    """`fn()` in a new thread inside the namespace; blocks until it returns."""
    result: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            enter(path)
            result.append(fn())
        except BaseException as exc:
            error.append(exc)

    thread = threading.Thread(target=target, name="netns", daemon=True)
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return result[0]


async def run_in(path: str, fn: Callable[[], T]) -> T:
    """`fn()` in a new thread inside the namespace, without blocking this event loop (which
    goes on serving, e.g. the in-process SSH server a process in the namespace talks to)."""
    return await asyncio.to_thread(call_in, path, fn)


def socket_in(path: str) -> socket.socket:
    """A TCP socket made inside the namespace."""
    return call_in(path, lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))


@contextlib.asynccontextmanager
async def forward_into(path: str, port: int, host: str = "127.0.0.1") -> AsyncIterator[None]:
    """Listen on host:port inside the namespace and carry each connection to host:port on this
    side, so one loopback address works on both (the in-process SSH server, say, for a
    provisioner that runs in the namespace)."""
    listener = socket_in(path)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(64)
    listener.setblocking(False)
    pipes: set[asyncio.Task[None]] = set()

    async def carry(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(host, port)
        except OSError:
            writer.close()
            return
        both = [
            asyncio.create_task(_pipe(reader, up_writer)),
            asyncio.create_task(_pipe(up_reader, writer)),
        ]
        pipes.update(both)
        await asyncio.gather(*both, return_exceptions=True)
        pipes.difference_update(both)

    server = await asyncio.start_server(carry, sock=listener)
    try:
        yield
    finally:
        server.close()
        for task in list(pipes):
            task.cancel()
        await asyncio.gather(*pipes, return_exceptions=True)
        await server.wait_closed()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()
