"""What a Compute API failure means, decided on its error codes (not the exception class).

An error arrives either as an HTTP error of the call (status, `errors[].reason`, a
Retry-After) or inside a finished operation (`error.errors[].code`, quota details). Both
are reduced to `ApiFailure` by the adapter and classified here (capacity: this zone has
no room for the machine type now, another zone may; quota: a project or region quota is
used up, permanent for this proxy). Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from proxyfleet.common.runner.failures import Classified, Kind


@dataclass(frozen=True, slots=True)
class ErrorEntry:
    code: str
    """`reason` of an HTTP error entry, or `code` of an operation error."""
    message: str = ""
    quota_metric: str = ""
    quota_limit: str = ""


@dataclass(frozen=True, slots=True)
class ApiFailure:
    status: int | None
    """HTTP status of the call or of the operation's error (None: no response at all)."""
    message: str
    entries: list[ErrorEntry] = field(default_factory=list)
    retry_after: float | None = None
    """The response's Retry-After, when it had one."""


RATE_LIMIT_RETRY = 10.0
"""Seconds before retrying after a rate limit without a Retry-After."""
CONCURRENT_OPERATIONS_RETRY = 15.0
"""Seconds before retrying after CONCURRENT_OPERATIONS_QUOTA_EXCEEDED."""
CAPACITY_RETRY = 60.0
"""Seconds before a pinned proxy tries its exhausted zone again."""

_RATE_LIMITS = frozenset({"rateLimitExceeded", "userRateLimitExceeded", "RATE_LIMIT_EXCEEDED"})
_CAPACITY = frozenset({"ZONE_RESOURCE_POOL_EXHAUSTED", "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"})
_CONCURRENT = frozenset({"CONCURRENT_OPERATIONS_QUOTA_EXCEEDED", "operationRateExceeded"})
_QUOTA = frozenset({"QUOTA_EXCEEDED", "quotaExceeded"})
_TEMPORARY_CODES = frozenset({"backendError", "internalError", "RESOURCE_NOT_READY", "timeout"})
_TIMEOUT_STATUSES = frozenset({408, 504})


def classify(failure: ApiFailure) -> Classified:
    codes = {e.code for e in failure.entries}
    first = failure.entries[0] if failure.entries else None
    message = _message(failure)
    if codes & _CAPACITY:
        code = next(iter(sorted(codes & _CAPACITY)))
        return Classified(Kind.CAPACITY, code, message, CAPACITY_RETRY)
    if codes & _CONCURRENT:
        code = next(iter(sorted(codes & _CONCURRENT)))
        return Classified(
            Kind.TEMPORARY, code, message, failure.retry_after or CONCURRENT_OPERATIONS_RETRY
        )
    if codes & _RATE_LIMITS or failure.status == 429:
        code = next(iter(sorted(codes & _RATE_LIMITS)), "http_429")
        return Classified(Kind.TEMPORARY, code, message, failure.retry_after or RATE_LIMIT_RETRY)
    if codes & _QUOTA:
        entry = next(e for e in failure.entries if e.code in _QUOTA)
        quota = entry.quota_metric or entry.quota_limit or _quota_from_message(entry.message)
        text = f"quota {quota} exceeded: {entry.message}" if quota else entry.message
        return Classified(Kind.QUOTA, entry.code, text)
    if failure.status is None or failure.status >= 500 or failure.status in _TIMEOUT_STATUSES:
        code = (
            first.code if first else (f"http_{failure.status}" if failure.status else "no_response")
        )
        return Classified(Kind.TEMPORARY, code, message, failure.retry_after)
    if codes & _TEMPORARY_CODES:
        code = next(iter(sorted(codes & _TEMPORARY_CODES)))
        return Classified(Kind.TEMPORARY, code, message, failure.retry_after)
    if failure.status == 404:
        return Classified(Kind.NOT_FOUND, first.code if first else "http_404", message)
    code = first.code if first else f"http_{failure.status}"
    return Classified(Kind.PERMANENT, code, message)


def _message(failure: ApiFailure) -> str:
    """Google's own words: the entries' messages, else the call's."""
    texts = [e.message for e in failure.entries if e.message]
    return "; ".join(dict.fromkeys(texts)) or failure.message or "no message"


def _quota_from_message(message: str) -> str:
    """Older operation errors name the quota only in text: "Quota 'CPUS' exceeded."."""
    start = message.find("'")
    end = message.find("'", start + 1)
    return message[start + 1 : end] if 0 <= start < end else ""
