"""What a Kubernetes API failure means, decided on its HTTP status and Status body.

The adapter reduces an `ApiException` (or a connection failure) to `ApiFailure`; this
module decides temporary / permanent / not found / already exists / gone. Pure: no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from proxyfleet.common.runner.failures import Classified, Kind


@dataclass(frozen=True, slots=True)
class ApiFailure:
    status: int | None
    """HTTP status (None or 0: no response at all)."""
    reason: str = ""
    """The Status body's `reason` (AlreadyExists, Forbidden, Invalid, ...) or the HTTP reason."""
    message: str = ""
    """The Status body's `message`: the API server's own words."""
    retry_after: float | None = None
    """Retry-After header (or the Status details' retryAfterSeconds)."""


RATE_LIMIT_RETRY = 1.0
"""Seconds before retrying a 429 that gave no Retry-After."""
_TEMPORARY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


def classify(f: ApiFailure, what: str) -> Classified:
    """`what` names the call ("create pods pf-p1") in the message."""
    message = f"{what}: {f.message or f.reason or 'no message'}"
    if not f.status:
        return Classified(Kind.TEMPORARY, "no_response", f"{what}: no answer ({f.reason})")
    if f.status == 429:
        return Classified(
            Kind.TEMPORARY, "http_429", f"{what}: rate limited (429): {f.message or f.reason}",
            f.retry_after if f.retry_after is not None else RATE_LIMIT_RETRY,
        )  # fmt: skip
    if f.status >= 500 or f.status in _TEMPORARY_STATUSES:
        return Classified(
            Kind.TEMPORARY, f"http_{f.status}", f"{message} ({f.status})", f.retry_after
        )
    if f.status == 404:
        return Classified(Kind.NOT_FOUND, "not_found", message)
    if f.status == 409:
        return Classified(Kind.EXISTS, f.reason or "conflict", message)
    if f.status == 410:
        return Classified(Kind.GONE, "gone", message)
    if f.status == 403:
        if "exceeded quota" in f.message:
            return Classified(
                Kind.PERMANENT, "quota", f"{what}: ResourceQuota exceeded: {f.message}"
            )
        return Classified(Kind.PERMANENT, "forbidden", f"{message} (403 Forbidden)")
    if f.status == 422:
        return Classified(Kind.PERMANENT, "invalid", f"{message} (422 Invalid)")
    if f.status == 401:
        return Classified(Kind.PERMANENT, "unauthorized", f"{message} (401 Unauthorized)")
    return Classified(Kind.PERMANENT, f"http_{f.status}", f"{message} ({f.status})")


def status_body(body: str | bytes | None) -> tuple[str, str, float | None]:
    """(reason, message, retryAfterSeconds) of a Kubernetes Status body; blanks when it is
    not one (a proxy's HTML error page, say)."""
    try:
        doc = json.loads(body or "")
    except (ValueError, UnicodeDecodeError):
        return "", "", None
    if not isinstance(doc, dict):
        return "", "", None
    details = doc.get("details")
    retry = details.get("retryAfterSeconds") if isinstance(details, dict) else None
    return (
        str(doc.get("reason") or ""),
        str(doc.get("message") or ""),
        float(retry) if isinstance(retry, int | float) and retry > 0 else None,
    )


def retry_after_header(value: str | None) -> float | None:
    """Seconds of a Retry-After header (the delta-seconds form Kubernetes sends)."""
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and seconds >= 0 else None
