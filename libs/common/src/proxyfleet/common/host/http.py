"""The /healthz, /readyz and /metrics server of every service without a web framework.
/readyz answers 200 only when every check passes, and lists each check's result."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping

from proxyfleet.common.host.spec import Check, ReadyCheck
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.observability.metrics import render_metrics

log = get_logger("proxyfleet.host")

PATHS = ("/healthz", "/readyz", "/metrics")

CHECK_TIMEOUT = 2.0
"""Seconds one readiness check may take before it counts as failed."""


async def readiness(checks: Mapping[str, ReadyCheck]) -> dict[str, Check]:
    """Each check's result; a check that raises or hangs counts as not ready."""

    async def one(check: ReadyCheck) -> Check:
        try:
            answer = check()
            if inspect.isawaitable(answer):
                answer = await asyncio.wait_for(answer, CHECK_TIMEOUT)
        except Exception:  # a broken check must answer "not ready", whatever it raised
            return Check(ok=False)
        return answer if isinstance(answer, Check) else Check(ok=bool(answer))

    results = await asyncio.gather(*(one(c) for c in checks.values()))
    return dict(zip(checks, results, strict=True))


def _line(name: str, check: Check) -> str:
    detail = f" ({check.detail})" if check.detail else ""
    return f"{name}: {'ok' if check.ok else 'not ready'}{detail}\n"


async def serve_health_and_metrics(
    host: str, port: int, checks: Mapping[str, ReadyCheck], stop: asyncio.Event
) -> None:
    """Serve until `stop` is set."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await reader.readline()
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass
            method, _, rest = line.partition(b" ")
            path = rest.split(b" ")[0].decode() if line.count(b" ") >= 2 else "/"
            status, body, ctype = "404 Not Found", b"not found\n", "text/plain"
            extra = ""
            if path in PATHS and method not in (b"GET", b"HEAD"):
                status, body = "405 Method Not Allowed", b"method not allowed\n"
                extra = "Allow: GET, HEAD\r\n"  # RFC 9110: a 405 lists what is allowed
            elif path == "/healthz":
                status, body = "200 OK", b"ok\n"
            elif path == "/readyz":
                results = await readiness(checks)
                ok = all(c.ok for c in results.values())
                status = "200 OK" if ok else "503 Service Unavailable"
                body = "".join(_line(name, c) for name, c in results.items()).encode()
            elif path == "/metrics":
                body, ctype = render_metrics()
                status = "200 OK"
            head = (
                f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n{extra}"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode() + (b"" if method == b"HEAD" else body))
            await writer.drain()
        except (OSError, IndexError, UnicodeDecodeError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, host, port)
    log.info("service.http_listening", host=host, port=port)
    async with server:
        await stop.wait()
