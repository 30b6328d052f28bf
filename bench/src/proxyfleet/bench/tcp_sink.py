"""A bare TCP endpoint for the CONNECT set-up benchmarks: it accepts, holds each
connection until the other end closes it, and sends nothing. A TLS server as the target
made each connection cost the target itself 240-660 us of CPU (an SSL object per accept,
more when fewer connections are dropped before they are served), on the cores the
proxies under test share; this one costs a few microseconds.

`python -m proxyfleet.bench.tcp_sink` prints `listening on PORT`."""

from __future__ import annotations

import asyncio
import contextlib

import uvloop


class _Hold(asyncio.Protocol):
    def eof_received(self) -> bool:
        return False  # close our side too


async def _serve() -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(_Hold, "127.0.0.1", 0, backlog=4096)
    print(f"listening on {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    with contextlib.suppress(KeyboardInterrupt):
        uvloop.run(_serve())


if __name__ == "__main__":
    main()
