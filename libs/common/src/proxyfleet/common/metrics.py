"""Prometheus helpers shared by the services; every service serves /metrics."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Histogram, generate_latest
from prometheus_client.registry import REGISTRY

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)

MESSAGES = Counter(
    "proxyfleet_messages_handled_total",
    "NATS messages handled, by subject family and result.",
    ["kind", "result"],
)
MESSAGE_SECONDS = Histogram(
    "proxyfleet_message_handling_seconds",
    "Time to handle one NATS message.",
    ["kind"],
    buckets=LATENCY_BUCKETS,
)
PROVIDER_CALL_SECONDS = Histogram(
    "proxyfleet_provider_call_seconds",
    "Latency of provider calls by provider, operation and result.",
    ["provider", "op", "result"],
    buckets=LATENCY_BUCKETS,
)
RETRIES = Counter(
    "proxyfleet_retries_total",
    "Operations retried after a named temporary error.",
    ["op"],
)


def render_metrics() -> tuple[bytes, str]:
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


HealthCheck = Callable[[], Awaitable[bool]]


async def serve_health_and_metrics(
    host: str, port: int, ready: HealthCheck, stop: asyncio.Event
) -> None:
    """A tiny HTTP server for services without a web framework: /healthz, /readyz, /metrics."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await reader.readline()
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass
            path = line.split(b" ")[1].decode() if line.count(b" ") >= 2 else "/"
            status, body, ctype = "404 Not Found", b"not found\n", "text/plain"
            if path == "/healthz":
                status, body = "200 OK", b"ok\n"
            elif path == "/readyz":
                ok = await ready()
                status = "200 OK" if ok else "503 Service Unavailable"
                body = b"ready\n" if ok else b"not ready\n"
            elif path == "/metrics":
                body, ctype = render_metrics()
                status = "200 OK"
            head = (
                f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode() + body)
            await writer.drain()
        except (OSError, IndexError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, host, port)
    async with server:
        await stop.wait()
