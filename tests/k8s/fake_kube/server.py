"""The HTTP side: a threaded server on 127.0.0.1 speaking the API server's JSON dialect;
watches are chunked streams of one JSON event per line."""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from .errors import KubeError
from .events import Event
from .faults import Call, Fault, Faults
from .operations import handle
from .routes import Logs, Reply, Request, WatchReply, classify
from .store import Store

log = logging.getLogger(__name__)


class KubeServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, store: Store, faults: Faults) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.store = store
        self.faults = faults
        self.token: str | None = None
        """When set, requests must carry `Authorization: Bearer <token>` (else 401)."""
        self.bookmark_interval = 1.0
        """Seconds between BOOKMARK events on watches that allow them."""
        self.logs: Logs = lambda namespace, name, tail: None
        self.thread = threading.Thread(target=self.serve_forever, name="fakekube-http")
        self.thread.daemon = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.store.drop_watches()
        self.shutdown()
        self.server_close()
        self.thread.join(5)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: no delayed-ACK stall
    server: KubeServer

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("fake kube: " + format, *args)

    def _serve(self, method: str) -> None:
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        req = Request(
            method,
            url.path,
            dict(parse_qsl(url.query, keep_blank_values=True)),
            None,
            self.headers.get("Content-Type") or "application/json",
        )
        faults = self.server.faults
        fault: Fault | None = None
        try:
            classify(req, self.server.store)
            fault = self._admit(req)
            if fault is not None and fault.kind == "delay":
                time.sleep(fault.seconds)
            if fault is not None and fault.kind == "disconnect" and not fault.after:
                self._hang_up(req)
                return
            try:
                req.body = json.loads(raw) if raw else None
            except ValueError as exc:
                raise KubeError(400, "BadRequest", f"json: {exc}") from exc
            address = self.server.url[len("http://") :]
            reply = handle(req, self.server.store, faults, address, self.server.logs)
        except KubeError as exc:
            self._record(req, exc.code)
            if req.verb == "watch" and exc.code == 410:
                self._expired(exc)  # as the real server: 200, then an ERROR event
            else:
                self._answer(exc.code, exc.status(), exc.headers())
            return
        except Exception:  # a bug in the fake: say so as a 500, never as a dropped socket
            log.exception("fake kube: %s %s failed", method, self.path)
            self._record(req, 500)
            err = KubeError(500, "InternalError", "Internal error in the fake API server")
            self._answer(500, err.status())
            return
        if fault is not None and fault.kind == "disconnect":
            self._hang_up(req)  # carried out, never answered
            return
        if isinstance(reply, Reply):
            self._record(req, reply.code)
            self._answer(reply.code, reply.body, reply.headers)
        else:
            self._record(req, 200)
            self._stream(reply)

    def _admit(self, req: Request) -> Fault | None:
        """401 without the token the fake wants; the injected status when one is due, or
        the delay or disconnect due."""
        token = self.server.token
        if token is not None and self.headers.get("Authorization") != f"Bearer {token}":
            raise KubeError(401, "Unauthorized", "Unauthorized")
        fault = self.server.faults.take(req.verb, req.resource) if req.resource else None
        if fault is not None and fault.kind == "status":
            raise fault.error(req.verb, req.resource, req.namespace, req.name)
        return fault

    def _hang_up(self, req: Request) -> None:
        self._record(req, 0)
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _record(self, req: Request, code: int) -> None:
        if req.verb:
            agent = self.headers.get("User-Agent") or ""
            call = Call(req.verb, req.resource, req.namespace, req.name, code, req.group, agent)
            self.server.faults.record(call)

    def _answer(
        self, code: int, body: dict[str, Any] | str, headers: dict[str, str] | None = None
    ) -> None:
        text = isinstance(body, str)
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain" if text else "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, reply: WatchReply) -> None:
        store = self.server.store
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        deadline = time.monotonic() + reply.timeout if reply.timeout else None
        last_bookmark = time.monotonic()
        try:
            for event in reply.first:
                self._chunk({"type": event.type, "object": event.obj})
            while True:
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    break
                wait = self.server.bookmark_interval
                if deadline is not None:
                    wait = min(wait, deadline - now)
                try:
                    item: Event | None = reply.watcher.events.get(timeout=max(wait, 0.01))
                except queue.Empty:
                    if (
                        reply.bookmarks
                        and time.monotonic() - last_bookmark >= self.server.bookmark_interval
                    ):
                        last_bookmark = time.monotonic()
                        rv = store.resource_version
                        self._chunk(_bookmark(reply.kind, reply.api_version, rv))
                    continue
                if item is None:  # dropped: end abruptly, as a broken connection does
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if (seen := item.seen_as(reply.keep)) is not None:
                    self._chunk({"type": seen, "object": item.obj})
            self.wfile.write(b"0\r\n\r\n")  # the server's own timeout ends the stream cleanly
            self.wfile.flush()
        except OSError:
            self.close_connection = True  # the client went away
        finally:
            store.unwatch(reply.watcher)

    def _expired(self, exc: KubeError) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._chunk({"type": "ERROR", "object": exc.status()})
        self.wfile.write(b"0\r\n\r\n")

    def _chunk(self, event: dict[str, Any]) -> None:
        data = json.dumps(event).encode() + b"\n"
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _bookmark(kind: str, api_version: str, rv: int) -> dict[str, Any]:
    return {
        "type": "BOOKMARK",
        "object": {
            "kind": kind,
            "apiVersion": api_version,
            "metadata": {"resourceVersion": str(rv)},
        },
    }
