"""Every error leaves the API as JSON {"error": code, "message": text}; mapped in one place.

Domain errors (proxyfleet.common.core.errors) map to HTTP here and nowhere else; the body's
`error` is the error's `code`: InvalidInput -> 400, NotFound -> 404, Conflict -> 409 and
Unavailable -> 503, both with Retry-After when the store knows one; a TemporaryError (a
store or messaging outage) -> 503 with Retry-After. The domain services raise these and
know nothing of HTTP.
"""

from __future__ import annotations

import math
from types import TracebackType
from typing import Any

import msgspec
import nats.errors
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi.datastructures import ResponseSpec
from litestar.types import ExceptionHandlersMap

from proxyfleet.common.core.errors import (
    Conflict,
    DomainError,
    InvalidInput,
    MessagingUnavailable,
    NotFound,
    StoreUnavailable,
    TemporaryError,
    Unavailable,
)
from proxyfleet.common.observability.logging import get_logger

log = get_logger(__name__)

_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "too_many_requests",
    503: "unavailable",
}


class ErrorBody(msgspec.Struct, kw_only=True):
    """The body of every error response."""

    error: str
    """A short, stable code (bad_request, not_found, proxy_leased, ...)."""
    message: str
    """What went wrong, for a human."""


def retry_after_header(seconds: float) -> str:
    """Whole seconds, rounded up, at least 1 (what HTTP clients understand)."""
    return str(max(1, math.ceil(seconds)))


def error_response(
    status_code: int,
    code: str,
    message: str,
    retry_after: float | None = None,
    headers: dict[str, str] | None = None,
) -> Response[ErrorBody]:
    headers = dict(headers or {})
    if retry_after is not None:
        headers["Retry-After"] = retry_after_header(retry_after)
    if status_code == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="proxyfleet"'
    return Response(
        ErrorBody(error=code, message=message), status_code=status_code, headers=headers
    )


def error_responses(*codes: int) -> dict[int, ResponseSpec]:
    """OpenAPI descriptions of the error responses a route may give. No generated
    examples: Litestar makes them with polyfactory and Faker, whose import alone added
    about 60 MB to the API's resident memory."""
    return {
        c: ResponseSpec(
            data_container=ErrorBody,
            description=_HTTP_CODES.get(c, "error"),
            generate_examples=False,
        )
        for c in codes
    }


def _validation_message(exc: ValidationException) -> str:
    extra = exc.extra if isinstance(exc.extra, list) else []
    parts: list[str] = []
    for item in extra:
        if not isinstance(item, dict):
            continue
        key, source, text = item.get("key", ""), item.get("source", ""), item.get("message", "")
        if source == "body" and key == "data":
            if text == "'data'":
                text = "a JSON object is required"
            parts.append(f"request body: {text}")
        elif source == "body":
            parts.append(f"field {key!s}: {text}")
        elif source:  # a ParamType: path, query, header, cookie
            parts.append(f"{getattr(source, 'value', source)} parameter {key!s}: {text}")
        else:
            parts.append(str(text) or str(key))
    return "; ".join(parts) or str(exc.detail)


def _http(_: Request[Any, Any, Any], exc: HTTPException) -> Response[ErrorBody]:
    status = exc.status_code
    if isinstance(exc, ValidationException):
        return error_response(status, "invalid_input", _validation_message(exc))
    code = _HTTP_CODES.get(status, f"http_{status}")
    message = str(exc.detail)
    if status == 404 and message == "Not Found":
        message = "no such route"
    elif status == 405:
        message = "method not allowed on this route"
    # Litestar's own headers, e.g. the Allow of a 405 (RFC 9110 requires it)
    return error_response(status, code, message, headers=exc.headers)


_DOMAIN_STATUS: tuple[tuple[type[DomainError], int], ...] = (
    (InvalidInput, 400),
    (NotFound, 404),
    (Conflict, 409),
    (Unavailable, 503),
)
"""HTTP status per domain error class (first match); any other DomainError is a 400."""


def domain_error_status(exc: DomainError) -> int:
    return next((status for cls, status in _DOMAIN_STATUS if isinstance(exc, cls)), 400)


def _domain(_: Request[Any, Any, Any], exc: DomainError) -> Response[ErrorBody]:
    retry_after = exc.retry_after if isinstance(exc, Conflict | Unavailable) else None
    return error_response(domain_error_status(exc), exc.code, str(exc), retry_after)


DEFAULT_RETRY_AFTER = 1.0
"""Retry-After of an outage whose source gave no hint."""


def _temporary(_: Request[Any, Any, Any], exc: TemporaryError) -> Response[ErrorBody]:
    retry_after = exc.retry_after if exc.retry_after is not None else DEFAULT_RETRY_AFTER
    if isinstance(exc, StoreUnavailable):
        code, message = "store_unavailable", "Redis is not reachable; try again"
    elif isinstance(exc, MessagingUnavailable):
        code, message = "messaging_unavailable", "NATS is not reachable; try again"
    else:
        code, message = "unavailable", f"{exc}; try again"
    log.warning("api.dependency_unavailable", code=code, error=str(exc) or type(exc).__name__)
    return error_response(503, code, message, retry_after)


TOO_DEEP = "request body: JSON nested too deeply"

_BODY_DECODERS = "litestar.serialization.msgspec_hooks"
"""Where Litestar decodes request bodies (decode_json, decode_msgpack) with msgspec."""


def _raised_while_decoding(tb: TracebackType | None) -> bool:
    while tb is not None:
        if tb.tb_frame.f_globals.get("__name__") == _BODY_DECODERS:
            return True
        tb = tb.tb_next
    return False


def _recursion(_: Request[Any, Any, Any], exc: RecursionError) -> Response[ErrorBody]:
    """msgspec gives up on a body nested deeper than the interpreter's recursion limit
    (about 1,000 levels, a 2 KB body): that is bad input. Any other RecursionError is ours."""
    if _raised_while_decoding(exc.__traceback__):
        return error_response(400, "bad_request", TOO_DEEP)
    return _internal(_, exc)


def _nats(_: Request[Any, Any, Any], exc: nats.errors.Error) -> Response[ErrorBody]:
    log.warning("api.nats_error", error=str(exc) or type(exc).__name__)
    return error_response(503, "messaging_unavailable", "NATS is not reachable; try again")


def _internal(_: Request[Any, Any, Any], exc: Exception) -> Response[ErrorBody]:
    log.error("api.unhandled_error", error_type=type(exc).__name__, exc_info=exc)
    return error_response(500, "internal_error", "internal error; see the API logs")


EXCEPTION_HANDLERS: ExceptionHandlersMap = {
    HTTPException: _http,
    DomainError: _domain,
    TemporaryError: _temporary,
    RecursionError: _recursion,
    nats.errors.Error: _nats,
    Exception: _internal,
}
