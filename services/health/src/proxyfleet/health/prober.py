"""One real probe: TCP to the proxy, CONNECT with its credentials, TLS to the target inside
the tunnel, one GET. Bounded by a timeout; the socket is always closed."""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass

from proxyfleet.common.clock import Clock
from proxyfleet.common.errors import ConfigError
from proxyfleet.common.models import ProbeResult, Proxy
from proxyfleet.health import probe
from proxyfleet.health.probe import FailureKind, ProbeFailure, Target

OK = "ok"
ERROR = "error"
"""Metric label of a probe that crashed (a bug, not a proxy failure)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """A probe's result, and its metric label: "ok" or a FailureKind."""

    result: ProbeResult
    kind: str


def make_ssl_context(ca_file: str = "") -> ssl.SSLContext:
    """Verifying client context, built once per process (CA file: the target's private CA)."""
    try:
        return ssl.create_default_context(cafile=ca_file or None)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"--ca-file {ca_file}: cannot load CA certificates: {exc}") from None


class Prober:
    """Probes proxies against one target; everything per target is built once here."""

    def __init__(
        self,
        target: Target,
        *,
        timeout: float,
        clock: Clock,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._target = target
        self._timeout = timeout
        self._clock = clock
        self._ssl = (ssl_context or make_ssl_context()) if target.tls else None
        self._get = probe.get_request(target)

    async def probe(self, proxy: Proxy) -> Outcome:
        """Probe one proxy; never raises for a failure of the proxy or the target."""
        loop = asyncio.get_running_loop()
        started_at = self._clock.now()
        start = loop.time()
        conn = _Connection()
        try:
            async with asyncio.timeout(self._timeout):
                ip = await self._exchange(proxy, conn)
            return _outcome(proxy, started_at, loop.time() - start, OK, egress_ip=ip)
        except ProbeFailure as exc:
            return _outcome(proxy, started_at, loop.time() - start, exc.kind, str(exc))
        except TimeoutError:
            message = f"timed out after {self._timeout:g}s {conn.stage}"
            return _outcome(proxy, started_at, loop.time() - start, FailureKind.TIMEOUT, message)
        finally:
            conn.close()

    async def _exchange(self, proxy: Proxy, conn: _Connection) -> str:
        """CONNECT, TLS, GET; returns the egress IP ("" when not reported)."""
        if not proxy.host or not proxy.port:
            raise ProbeFailure(FailureKind.UNREACHABLE, "proxy has no address yet")
        conn.stage = "connecting to the proxy"
        try:
            reader, conn.writer = await asyncio.open_connection(
                proxy.host, proxy.port, limit=probe.MAX_HEAD_BYTES
            )
        except OSError as exc:
            message = f"proxy unreachable: {_os_error(exc)}"
            raise ProbeFailure(FailureKind.UNREACHABLE, message) from None
        conn.stage = "waiting for the proxy's CONNECT reply"
        conn.writer.write(probe.connect_request(self._target, proxy.username, proxy.password))
        head = probe.parse_response_head(await _read_head(reader, "proxy"), "proxy")
        probe.check_connect(head)
        if self._ssl is not None:
            conn.stage = "in the TLS handshake with the target"
            await _start_tls(conn.writer, self._ssl, self._target.host)
        conn.stage = "waiting for the target's reply"
        conn.writer.write(self._get)
        head = probe.parse_response_head(await _read_head(reader, "target"), "target")
        probe.check_target(head)
        if not probe.wants_body(head):
            return ""
        return probe.egress_ip(await _read_body(reader, head))


class _Connection:
    """The probe's socket and how far it got (for timeout messages)."""

    __slots__ = ("stage", "writer")

    def __init__(self) -> None:
        self.writer: asyncio.StreamWriter | None = None
        self.stage = "before connecting"

    def close(self) -> None:
        """Abort: a probe never reuses its connection, and a graceful TLS close could
        linger up to 30 s waiting for the peer's close_notify."""
        if self.writer is not None:
            self.writer.transport.abort()


def _outcome(
    proxy: Proxy, started_at: float, seconds: float, kind: str, error: str = "", egress_ip: str = ""
) -> Outcome:
    result = ProbeResult(
        proxy_id=proxy.id,
        time=started_at,
        ok=kind == OK,
        latency_ms=round(seconds * 1000, 3),
        error=error,
        egress_ip=egress_ip,
    )
    return Outcome(result, kind)


def _os_error(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


async def _read_head(reader: asyncio.StreamReader, who: str) -> bytes:
    kind = FailureKind.PROXY if who == "proxy" else FailureKind.TARGET
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        raise ProbeFailure(kind, f"{who} closed the connection before answering") from None
    except asyncio.LimitOverrunError:
        raise ProbeFailure(kind, f"{who} sent a response head that is too long") from None
    except OSError as exc:
        raise ProbeFailure(kind, f"{who} connection failed: {_os_error(exc)}") from None


async def _start_tls(writer: asyncio.StreamWriter, context: ssl.SSLContext, host: str) -> None:
    try:
        await writer.start_tls(context, server_hostname=host)
    except ssl.SSLCertVerificationError as exc:
        message = f"target certificate rejected: {exc.verify_message or exc.reason}"
        raise ProbeFailure(FailureKind.TLS, message) from None
    except ssl.SSLError as exc:
        raise ProbeFailure(FailureKind.TLS, f"TLS with the target failed: {exc.reason}") from None
    except OSError as exc:
        message = f"tunnel closed during the TLS handshake: {_os_error(exc)}"
        raise ProbeFailure(FailureKind.TLS, message) from None


async def _read_body(reader: asyncio.StreamReader, head: probe.ResponseHead) -> bytes:
    """The body, at most MAX_BODY_BYTES; a short or failed read gives what arrived."""
    length = head.content_length
    if length is not None and not probe.is_chunked(head):
        try:
            return await reader.readexactly(min(length, probe.MAX_BODY_BYTES))
        except asyncio.IncompleteReadError as exc:
            return exc.partial
        except OSError:
            return b""
    data = bytearray()
    try:
        while len(data) < probe.MAX_BODY_BYTES:
            chunk = await reader.read(probe.MAX_BODY_BYTES - len(data))
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    return probe.dechunk(bytes(data)) if probe.is_chunked(head) else bytes(data)
