"""The client's exceptions; an HTTP error answer maps to one in `api_error` and nowhere else."""

from __future__ import annotations

import email.utils
import time

import msgspec


class ProxyfleetError(Exception):
    """Anything this client raises."""


class TransportError(ProxyfleetError):
    """The API could not be reached or did not answer (connection refused, timeout)."""


class ApiError(ProxyfleetError):
    """The API answered with an error: its `error` code, `message`, HTTP status, and
    Retry-After in seconds when it sent one."""

    def __init__(
        self, status: int, error: str, message: str, retry_after: float | None = None
    ) -> None:
        super().__init__(f"{status} {error}: {message}")
        self.status = status
        self.error = error
        self.message = message
        self.retry_after = retry_after


class BadRequest(ApiError):
    """400 (and 413, 415): the request was wrong; retrying will not help."""


class Unauthorized(ApiError):
    """401: no token or an unknown one."""


class Forbidden(ApiError):
    """403: the token's scope does not allow this (e.g. a client token creating proxies)."""


class NotFound(ApiError):
    """404."""


class Conflict(ApiError):
    """409: stale epoch, lease ended, proxy leased or cooling down (with Retry-After)."""


class RateLimited(ApiError):
    """429."""


class Unavailable(ApiError):
    """503: no proxy free, or the API's store or messaging is down (with Retry-After)."""


class ServerError(ApiError):
    """Another 5xx."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: BadRequest,
    415: BadRequest,
    429: RateLimited,
    503: Unavailable,
}


class _ErrorBody(msgspec.Struct):
    error: str = ""
    message: str = ""


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); None if absent
    or unreadable."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def api_error(status: int, body: bytes, retry_after_header: str | None) -> ApiError:
    """The exception for an error answer; a body that is not the API's JSON still gives one
    (code `http_<status>`, the start of the body as its message)."""
    try:
        parsed = msgspec.json.decode(body, type=_ErrorBody)
    except msgspec.DecodeError:
        parsed = _ErrorBody()
    code = parsed.error or f"http_{status}"
    message = parsed.message or body.decode("utf-8", "replace")[:200].strip() or f"HTTP {status}"
    cls = _BY_STATUS.get(status, ServerError if status >= 500 else ApiError)
    return cls(status, code, message, parse_retry_after(retry_after_header))
