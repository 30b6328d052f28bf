"""Google's JSON error bodies, as Compute v1 sends them. Pure: no I/O.

`GceError` is raised by the fake's handlers and rendered by the server as
`{"error": {"code", "message", "errors": [{"reason", "message", "domain"}], "status"}}`,
which `google.api_core.exceptions.from_http_response` turns into the client's exception
(404 NotFound, 409 Conflict, 400 BadRequest, 403 Forbidden, 429 TooManyRequests,
503 ServiceUnavailable) with `.errors` holding the reasons.
"""

from __future__ import annotations

from typing import Any

_STATUS = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ALREADY_EXISTS",
    412: "FAILED_PRECONDITION",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
}

HTTP_REASON = {
    400: "BAD REQUEST",
    403: "FORBIDDEN",
    404: "NOT FOUND",
    409: "CONFLICT",
    412: "PRECONDITION FAILED",
    429: "TOO MANY REQUESTS",
    500: "INTERNAL SERVER ERROR",
    503: "SERVICE UNAVAILABLE",
}
"""What an operation's `httpErrorMessage` says for its `httpErrorStatusCode`."""


class GceError(Exception):
    """An HTTP error answer of the fake, in Google's shape."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        domain: str = "global",
        status: str | None = None,
        details: list[dict[str, Any]] | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.domain = domain
        self.status = status or _STATUS.get(code, "UNKNOWN")
        self.details = details or []
        self.retry_after = retry_after

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {
            "code": self.code,
            "message": self.message,
            "errors": [{"message": self.message, "domain": self.domain, "reason": self.reason}],
            "status": self.status,
        }
        if self.details:
            error["details"] = self.details
        return {"error": error}


def not_found(resource: str) -> GceError:
    return GceError(404, "notFound", f"The resource '{resource}' was not found")


def already_exists(resource: str) -> GceError:
    return GceError(409, "alreadyExists", f"The resource '{resource}' already exists")


def invalid(field: str, value: object, why: str) -> GceError:
    return GceError(400, "invalid", f"Invalid value for field '{field}': '{value}'. {why}")


def bad_request(message: str, reason: str = "badRequest") -> GceError:
    return GceError(400, reason, message)


def resource_in_use(resource: str, user: str) -> GceError:
    return GceError(
        400,
        "resourceInUseByAnotherResource",
        f"The disk resource '{resource}' is already being used by '{user}'",
    )


def rate_limit_exceeded(method: str, retry_after: int | None = None) -> GceError:
    """What Compute answers when the per-minute API rate quota is spent (403, not 429).
    Compute sends no Retry-After; `retry_after` adds one for tests that want it."""
    return GceError(
        403,
        "rateLimitExceeded",
        "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service"
        " 'compute.googleapis.com' for consumer 'project_number:000000000000'.",
        domain="usageLimits",
        details=[_error_info("RATE_LIMIT_EXCEEDED", method)],
        retry_after=retry_after,
    )


def resource_exhausted(method: str, retry_after: int | None = None) -> GceError:
    return GceError(
        429,
        "rateLimitExceeded",
        "Resource has been exhausted (e.g. check quota).",
        domain="usageLimits",
        details=[_error_info("RATE_LIMIT_EXCEEDED", method)],
        retry_after=retry_after,
    )


def quota_exceeded(quota: str, limit: float, region: str) -> GceError:
    """The synchronous form of a quota error (some quotas are checked before any operation)."""
    return GceError(
        403,
        "quotaExceeded",
        f"Quota '{quota}' exceeded.  Limit: {limit} in region {region}.",
        domain="usageLimits",
    )


def unavailable() -> GceError:
    return GceError(503, "backendError", "The service is currently unavailable.")


def forbidden(permission: str, resource: str) -> GceError:
    return GceError(
        403, "forbidden", f"Required '{permission}' permission for '{resource}'", domain="global"
    )


def _error_info(reason: str, method: str) -> dict[str, Any]:
    return {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": reason,
        "domain": "googleapis.com",
        "metadata": {"service": "compute.googleapis.com", "method": method},
    }
