"""Every error leaves the API as JSON {"error": code, "message": text}; mapped in one place.

Store errors (proxyfleet.common.errors) map to HTTP here and nowhere else: NotFound -> 404,
Conflict -> 409, Unavailable -> 503, both with Retry-After when the store knows one;
StoreUnavailable and MessagingUnavailable (outages, named where they happen) -> 503 with
Retry-After.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec
import nats.errors
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi.datastructures import ResponseSpec
from litestar.types import ExceptionHandlersMap

from proxyfleet.common.errors import (
    Conflict,
    MessagingUnavailable,
    NotFound,
    StoreUnavailable,
    Unavailable,
)
from proxyfleet.common.logging import get_logger

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


class ApiError(Exception):
    """An error the API raises on purpose, with its status and code."""

    def __init__(
        self, status_code: int, code: str, message: str, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.code = code
        self.message = message
        self.retry_after = retry_after


def retry_after_header(seconds: float) -> str:
    """Whole seconds, rounded up, at least 1 (what HTTP clients understand)."""
    return str(max(1, math.ceil(seconds)))


def error_response(
    status_code: int, code: str, message: str, retry_after: float | None = None
) -> Response[ErrorBody]:
    headers: dict[str, str] = {}
    if retry_after is not None:
        headers["Retry-After"] = retry_after_header(retry_after)
    if status_code == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="proxyfleet"'
    return Response(
        ErrorBody(error=code, message=message), status_code=status_code, headers=headers
    )


def error_responses(*codes: int) -> dict[int, ResponseSpec]:
    """OpenAPI descriptions of the error responses a route may give."""
    return {
        c: ResponseSpec(data_container=ErrorBody, description=_HTTP_CODES.get(c, "error"))
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
        elif source:
            parts.append(f"{source} parameter {key!s}: {text}")
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
    return error_response(status, code, message)


def _api(_: Request[Any, Any, Any], exc: ApiError) -> Response[ErrorBody]:
    return error_response(exc.status_code, exc.code, exc.message, exc.retry_after)


def _not_found(_: Request[Any, Any, Any], exc: NotFound) -> Response[ErrorBody]:
    return error_response(404, "not_found", str(exc))


def _conflict(_: Request[Any, Any, Any], exc: Conflict) -> Response[ErrorBody]:
    return error_response(409, "conflict", str(exc), exc.retry_after)


def _unavailable(_: Request[Any, Any, Any], exc: Unavailable) -> Response[ErrorBody]:
    return error_response(503, "unavailable", str(exc), exc.retry_after)


def _nats(_: Request[Any, Any, Any], exc: nats.errors.Error) -> Response[ErrorBody]:
    log.warning("nats_error", error=str(exc) or type(exc).__name__)
    return error_response(503, "messaging_unavailable", "NATS is not reachable; try again")


def _store_outage(_: Request[Any, Any, Any], exc: StoreUnavailable) -> Response[ErrorBody]:
    log.warning("store_unavailable", error=str(exc))
    message = "Redis is not reachable; try again"
    return error_response(503, "store_unavailable", message, exc.retry_after or 1)


def _messaging_outage(_: Request[Any, Any, Any], exc: MessagingUnavailable) -> Response[ErrorBody]:
    log.warning("messaging_unavailable", error=str(exc))
    message = "NATS is not reachable; try again"
    return error_response(503, "messaging_unavailable", message, exc.retry_after or 1)


def _internal(_: Request[Any, Any, Any], exc: Exception) -> Response[ErrorBody]:
    log.error("unhandled_error", error_type=type(exc).__name__, exc_info=exc)
    return error_response(500, "internal_error", "internal error; see the API logs")


EXCEPTION_HANDLERS: ExceptionHandlersMap = {
    HTTPException: _http,
    ApiError: _api,
    NotFound: _not_found,
    Conflict: _conflict,
    Unavailable: _unavailable,
    StoreUnavailable: _store_outage,
    MessagingUnavailable: _messaging_outage,
    nats.errors.Error: _nats,
    Exception: _internal,
}
