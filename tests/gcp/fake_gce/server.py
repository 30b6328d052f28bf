"""The HTTP side: a threaded server on 127.0.0.1 that speaks Compute v1's REST dialect.

A `dropped` fault answers nothing: the call has been carried out (and recorded, requestId
included), then the socket is shut, as when a connection breaks after Google accepted it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from .errors import GceError
from .routes import Route, check_project, match
from .state import ComputeState

log = logging.getLogger(__name__)


HOLD_LIMIT_S = 30.0
"""A held call goes ahead by itself after this long (a test that forgot to release)."""


@dataclass
class Hold:
    """One call held before it is carried out (a request still on its way to Google), so a
    test can interleave other calls with it deterministically."""

    reached: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)

    def wait_reached(self, timeout: float = 10.0) -> bool:
        """True once the held call has arrived (blocking: run it in a thread)."""
        return self.reached.wait(timeout)

    def release(self) -> None:
        self.released.set()

    def block(self) -> None:
        self.reached.set()
        self.released.wait(HOLD_LIMIT_S)


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: ComputeState, routes: list[Route]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state
        self.routes = routes
        self.thread = threading.Thread(target=self.serve_forever, name="fakegce-http")
        self.thread.daemon = True

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self.thread.join(5)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: without TCP_NODELAY the client's delayed ACK
    # adds 40 ms to every call.
    disable_nagle_algorithm = True
    server: FakeServer

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("fake GCE: " + format, *args)

    def _serve(self, verb: str) -> None:
        url = urlsplit(self.path)
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        found = match(self.server.routes, verb, url.path)
        if found is None:
            # Loud, not a 404: an adapter would take a 404 on delete for "already gone".
            message = f"The fake GCE does not implement {verb} {url.path}"
            log.error("fake GCE: %s", message)
            with self.server.state.lock:
                self.server.state.calls["unimplemented"] += 1
            self._answer(501, GceError(501, "notImplemented", message).body())
            return
        route, params = found
        state = self.server.state
        try:
            fault = state.begin(route.method, params.get("zone"))
            if fault is not None and fault.kind == "hold":
                fault.params["hold"].block()
            check_project(state, route, params)
            try:
                body = json.loads(raw) if raw else {}
            except ValueError as exc:
                raise GceError(400, "parseError", "Invalid JSON payload received.") from exc
            answer = route.handler(params, query, body, fault)
        except GceError as exc:
            headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else {}
            self._answer(exc.code, exc.body(), headers)
            return
        except Exception:  # a bug in the fake: say so as a 500, never as a dropped socket
            log.exception("fake GCE: %s %s failed", verb, url.path)
            self._answer(500, GceError(500, "backendError", "Internal error in the fake.").body())
            return
        if fault is not None and fault.kind == "delay":
            time.sleep(float(fault.params.get("seconds", 5.0)))
        if fault is not None and fault.kind == "dropped":
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        self._answer(200, answer)

    def _answer(
        self, code: int, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
