"""The lease fast path: POST /v1/leases and POST /v1/leases/{lease_id}/release served
without Litestar's per-request pipeline (A11 in docs/decisions/api.md).

Litestar's routing, guard call, dependency injection, body extraction and response
building were 40-60 % of these routes' CPU (docs/performance.md). The fast path serves a
request only when it is sure of the answer Litestar would give: the exact path, a known
bearer token, a body within the size limit that decodes strictly into the route's
schema, an Idempotency-Key absent or valid, the backends open. Anything else (a bad
token, a bad body, an odd header) goes to Litestar with the body it already read, so
every refusal before the store is Litestar's own. What the store refuses is answered by
the app's own exception handlers, rendered by Litestar's response class; the handler's
work is `leases.answers`, which the Litestar handlers call too.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from inspect import getmro
from typing import Any, cast

import msgspec
from litestar import Request
from litestar.datastructures import State

from proxyfleet.api.container import Services, maybe_services
from proxyfleet.api.http.auth import Principal, TokenAuth
from proxyfleet.api.http.errors import EXCEPTION_HANDLERS
from proxyfleet.api.http.idempotency import valid_key
from proxyfleet.api.http.request_metrics import observe_request
from proxyfleet.api.leases import answers
from proxyfleet.api.leases.schemas import GrantLease, ReleaseLease
from proxyfleet.api.leases.service import LeaseService

Message = MutableMapping[str, Any]
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]

GRANT_PATH = "/v1/leases"
GRANT_TEMPLATE = "/v1/leases"
RELEASE_TEMPLATE = "/v1/leases/{lease_id:str}/release"
"""The route templates Litestar labels these routes' request metrics with."""
MAX_LEASE_ID_CHARS = 64
"""The lease id path parameter's bound (controller.LeaseIdParam)."""

_GRANT = msgspec.json.Decoder(GrantLease, strict=True)
_RELEASE = msgspec.json.Decoder(ReleaseLease, strict=True)
_encode = msgspec.json.Encoder().encode
_JSON = (b"content-type", b"application/json")


@dataclass(frozen=True, slots=True)
class Route:
    template: str
    status: int
    lease_id: str = ""
    """The release's path parameter ("" for a grant)."""


_GRANT_ROUTE = Route(GRANT_TEMPLATE, 201)


def route_of(scope: Scope) -> Route | None:
    """The fast route of a request, or None (Litestar's)."""
    if scope["type"] != "http" or scope["method"] != "POST" or scope.get("root_path"):
        return None
    path: str = scope["path"]
    if path == GRANT_PATH:
        return _GRANT_ROUTE
    if path.startswith("/v1/leases/") and path.endswith("/release"):
        lease_id = path[len("/v1/leases/") : -len("/release")]
        if 0 < len(lease_id) <= MAX_LEASE_ID_CHARS and "/" not in lease_id:
            return Route(RELEASE_TEMPLATE, 200, lease_id)
    return None


class _Declined(Exception):
    """The fast path cannot be sure of Litestar's answer: Litestar serves the request."""


@dataclass(slots=True)
class _Headers:
    authorization: str | None = None
    idempotency_key: str | None = None


def _headers(scope: Scope) -> _Headers:
    """The two headers the fast path reads; _Declined when either comes twice (which
    one Litestar would read is its business)."""
    found = _Headers()
    for name, value in scope["headers"]:
        if name == b"authorization":
            if found.authorization is not None:
                raise _Declined
            found.authorization = value.decode("latin-1")
        elif name == b"idempotency-key":
            if found.idempotency_key is not None:
                raise _Declined
            found.idempotency_key = value.decode("latin-1")
    return found


async def _read_body(receive: Receive, limit: int, seen: list[Message]) -> bytes:
    """The whole body (each message kept in `seen`, for Litestar if it serves the request);
    _Declined above `limit` bytes or on anything but body messages."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        seen.append(message)
        if message["type"] != "http.request":
            raise _Declined
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _Declined
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _replaying(seen: list[Message], receive: Receive) -> Receive:
    """`receive` with the messages already read in front."""
    pending = list(seen)

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return replay


class LeaseFastPath:
    def __init__(self, auth: TokenAuth, state: State, max_body: int) -> None:
        self._auth = auth
        self._state = state
        self._max_body = max_body

    def _services(self) -> Services:
        services = maybe_services(self._state)
        if services is None:
            raise _Declined  # 503 while connecting: Litestar's answer
        return services

    def _caller(self, authorization: str | None) -> Principal:
        """The caller, as the guard would identify it; both scopes may use these routes."""
        principal = self._auth.bearer_principal(authorization or "")
        if principal is None:
            raise _Declined  # 401: Litestar's guard answers
        return principal

    async def serve(
        self, route: Route, scope: Scope, receive: Receive, send: Send, fallback: AsgiApp
    ) -> None:
        """Answer the request, or have `fallback` (Litestar) answer it."""
        start = time.perf_counter()
        seen: list[Message] = []
        try:
            services = self._services()
            headers = _headers(scope)
            caller = self._caller(headers.authorization)
            body = await _read_body(receive, self._max_body, seen)
            call = self._call(route, services.leases, caller, headers, body)
        except (_Declined, msgspec.DecodeError, RecursionError):
            await fallback(scope, _replaying(seen, receive), send)
            return
        try:
            answer = _encode(await call)
        except Exception as exc:  # handled as Litestar would: EXCEPTION_HANDLERS
            status = await _send_error(exc, scope, receive, send)
        else:
            status = route.status
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [_JSON, (b"content-length", str(len(answer)).encode())],
                }
            )
            await send({"type": "http.response.body", "body": answer, "more_body": False})
        observe_request(route.template, "POST", status, time.perf_counter() - start)

    def _call(
        self,
        route: Route,
        service: LeaseService,
        caller: Principal,
        headers: _Headers,
        body: bytes,
    ) -> Awaitable[msgspec.Struct]:
        """The route's work, not started yet: decoding (which may decline) comes first."""
        if route is _GRANT_ROUTE:
            key = headers.idempotency_key
            if key is not None and not valid_key(key):
                raise _Declined  # Litestar's or the service's 400
            return answers.grant_lease(service, _GRANT.decode(body), caller, key)
        release = _RELEASE.decode(body)
        return answers.release_lease(service, route.lease_id, release.epoch, caller)


async def _send_error(exc: Exception, scope: Scope, receive: Receive, send: Send) -> int:
    """The app's exception handler's answer to `exc`, rendered by Litestar; its status."""
    handler = next(
        (EXCEPTION_HANDLERS[cls] for cls in getmro(type(exc)) if cls in EXCEPTION_HANDLERS),
        EXCEPTION_HANDLERS[Exception],
    )
    # The handlers read nothing of the request (their first argument).
    response = handler(cast("Request[Any, Any, Any]", None), exc)
    asgi = response.to_asgi_response(app=None, request=cast("Request[Any, Any, Any]", None))
    await asgi(cast("Any", scope), cast("Any", receive), cast("Any", send))
    return asgi.status_code
