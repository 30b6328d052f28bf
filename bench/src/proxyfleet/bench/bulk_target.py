"""A local HTTPS server for the gateway benchmark's downloads: every GET is answered with
`--size` bytes (the dev stack's target answers small JSON only).

`python -m proxyfleet.bench.bulk_target --dir D --size N` prints `listening on PORT`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from pathlib import Path

from proxyfleet.devstack.target import make_tls_material, server_ssl_context

CHUNK = b"x" * 262_144


async def _serve(directory: Path, size: int) -> None:
    files = make_tls_material(directory)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(f"HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n".encode())
            left = size
            while left > 0:
                piece = CHUNK[: min(left, len(CHUNK))]
                writer.write(piece)
                left -= len(piece)
                await writer.drain()
        writer.close()

    server = await asyncio.start_server(
        answer, "127.0.0.1", 0, ssl=server_ssl_context(files), backlog=4096
    )
    print(f"listening on {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--size", type=int, default=256 * 1024 * 1024)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args.dir, args.size))


if __name__ == "__main__":
    main()
