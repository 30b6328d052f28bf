"""The dev stack's local HTTPS probe target, so that no probe leaves the machine.

`make_tls_material(dir)` writes a private CA and a server certificate for 127.0.0.1 and
localhost (ca.pem, cert.pem, key.pem); `start_target(...)` serves HTTPS and answers every
GET with 200 and `{"ok": true, "ip": "<peer ip>", "path": "<path>"}`: through a proxy, the
peer is the proxy's egress address.

    python -m proxyfleet.devstack.target --port 8443 --dir .dev/target

It runs on uvloop by default: with asyncio's pure-Python TLS protocol the target took a
good share of a core at a thousand probes a second, on the machine the health worker
shares with it in `make run` and the benchmarks (`--loop asyncio` still works).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import ssl
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec
import trustme
import uvloop

IDENTITIES = ("127.0.0.1", "localhost")
_json = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class TlsFiles:
    ca: Path
    """The private CA's certificate: give it to clients (`proxyfleet-health --ca-file`)."""
    cert: Path
    """The server certificate chain."""
    key: Path
    """The server's private key."""

    @classmethod
    def in_dir(cls, directory: Path) -> TlsFiles:
        return cls(ca=directory / "ca.pem", cert=directory / "cert.pem", key=directory / "key.pem")

    def exist(self) -> bool:
        return self.ca.is_file() and self.cert.is_file() and self.key.is_file()


def make_tls_material(
    directory: Path, *, reuse: bool = True, extra_identities: Sequence[str] = ()
) -> TlsFiles:
    """A CA and a server certificate for 127.0.0.1/localhost (and `extra_identities`) in
    `directory`.

    With `reuse`, files already there are kept, so clients configured with the CA keep
    trusting a restarted target.
    """
    files = TlsFiles.in_dir(directory)
    if reuse and files.exist():
        return files
    directory.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA(organization_name="proxyfleet dev")
    leaf = ca.issue_cert(*IDENTITIES, *(i for i in extra_identities if i not in IDENTITIES))
    ca.cert_pem.write_to_path(str(files.ca))
    files.cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    files.key.touch(mode=0o600)
    leaf.private_key_pem.write_to_path(str(files.key))
    return files


def server_ssl_context(files: TlsFiles) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(files.cert, files.key)
    return ctx


def _response(status: str, body: bytes, ctype: str = "application/json") -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + body


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        async with asyncio.timeout(10):
            head = await reader.readuntil(b"\r\n\r\n")
        method, _, rest = head.split(b"\r\n", 1)[0].decode("latin-1").partition(" ")
        path = rest.rsplit(" ", 1)[0] or "/"
        if method == "GET":
            peer = writer.get_extra_info("peername")
            ip = str(peer[0]) if peer else ""
            writer.write(_response("200 OK", _json.encode({"ok": True, "ip": ip, "path": path})))
        else:
            writer.write(_response("405 Method Not Allowed", b"GET only\n", "text/plain"))
        await writer.drain()
    except (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def start_target(host: str, port: int, files: TlsFiles) -> asyncio.Server:
    """Listen now (port 0: a free one, see `server.sockets`) and serve in the background."""
    return await asyncio.start_server(
        _handle,
        host,
        port,
        ssl=server_ssl_context(files),
        backlog=1024,  # a health worker opens hundreds of probes at once
        ssl_shutdown_timeout=5.0,
    )


async def _serve(host: str, port: int, directory: Path) -> None:
    files = make_tls_material(directory, extra_identities=[host])
    server = await start_target(host, port, files)
    bound = server.sockets[0].getsockname()[1]
    print(f"listening on https://{host}:{bound}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m proxyfleet.devstack.target",
        description="Local HTTPS target for health probes (private CA in DIR/ca.pem).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8443, help="port (0: a free one)")
    parser.add_argument("--dir", type=Path, required=True, help="where ca/cert/key.pem live")
    parser.add_argument(
        "--loop", choices=("uvloop", "asyncio"), default="uvloop", help="event loop"
    )
    args = parser.parse_args(argv)
    run = uvloop.run if args.loop == "uvloop" else asyncio.run
    with contextlib.suppress(KeyboardInterrupt):
        run(_serve(args.host, args.port, args.dir))


if __name__ == "__main__":
    main(sys.argv[1:])
