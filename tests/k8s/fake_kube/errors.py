"""The API server's errors as `Status` objects, with the reasons and messages the real
kube-apiserver sends (the client's ApiException carries status, reason, headers and body)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Json = dict[str, Any]

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


@dataclass
class KubeError(Exception):
    code: int
    reason: str
    message: str
    details: Json = field(default_factory=dict)
    retry_after: int | None = None

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def status(self) -> Json:
        body: Json = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        details = dict(self.details)
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
        if details:
            body["details"] = details
        return body

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)} if self.retry_after is not None else {}


def _ref(resource: str, name: str) -> str:
    return f'{resource} "{name}"' if name else resource


def not_found(resource: str, name: str) -> KubeError:
    return KubeError(
        404, "NotFound", f"{_ref(resource, name)} not found", {"name": name, "kind": resource}
    )


def already_exists(resource: str, name: str) -> KubeError:
    return KubeError(
        409,
        "AlreadyExists",
        f"{_ref(resource, name)} already exists",
        {"name": name, "kind": resource},
    )


def conflict(resource: str, name: str) -> KubeError:
    return KubeError(
        409,
        "Conflict",
        f"Operation cannot be fulfilled on {_ref(resource, name)}: the object has been "
        "modified; please apply your changes to the latest version and try again",
        {"name": name, "kind": resource},
    )


@dataclass(frozen=True)
class Cause:
    field: str
    reason: str
    """FieldValueInvalid, FieldValueRequired, FieldValueNotSupported, FieldValueDuplicate."""
    message: str


def invalid(kind: str, name: str, causes: list[Cause]) -> KubeError:
    """422 as the API server words it: `Pod "x" is invalid: [a: ..., b: ...]`."""
    parts = [f"{c.field}: {c.message}" for c in causes]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return KubeError(
        422,
        "Invalid",
        f'{kind} "{name}" is invalid: {joined}',
        {
            "name": name,
            "kind": kind,
            "causes": [
                {"reason": c.reason, "message": c.message, "field": c.field} for c in causes
            ],
        },
    )


def bad_request(message: str) -> KubeError:
    return KubeError(400, "BadRequest", message)


def expired(message: str) -> KubeError:
    return KubeError(410, "Expired", message)


def forbidden(resource: str, name: str, message: str) -> KubeError:
    return KubeError(
        403,
        "Forbidden",
        f"{_ref(resource, name)} is forbidden: {message}",
        {"name": name, "kind": resource},
    )


def from_code(
    code: int,
    *,
    verb: str,
    resource: str,
    namespace: str,
    name: str,
    reason: str | None = None,
    message: str | None = None,
    retry_after: int | None = None,
) -> KubeError:
    """An injected fault: the status the real server would send for `code`."""
    if code == 429 and retry_after is None:
        retry_after = 1  # the API server's priority-and-fairness throttling says 1
    default = {
        403: f'User "system:serviceaccount:{namespace or "default"}:default" cannot {verb} '
        f'resource "{resource}" in API group "" in the namespace "{namespace}"',
        404: f"{_ref(resource, name)} not found",
        409: f"Operation cannot be fulfilled on {_ref(resource, name)}: the object has been "
        "modified; please apply your changes to the latest version and try again",
        422: f"{_ref(resource, name)} is invalid: injected fault",
        429: "Too many requests, please try again later.",
        500: "Internal error occurred: injected fault",
        503: "The server is currently unable to handle the request",
        504: "The server was unable to return a response in the time allotted, but may "
        "still be processing the request",
    }.get(code, f"injected fault {code}")
    if code == 409 and verb == "create":
        default = f"{_ref(resource, name)} already exists"
        reason = reason or "AlreadyExists"
    text = message or default
    if code == 403 and message is None:
        text = f"{_ref(resource, name)} is forbidden: {text}"
    details: Json = {"kind": resource}
    if name:
        details["name"] = name
    return KubeError(code, reason or REASONS.get(code, "Unknown"), text, details, retry_after)
