"""The one mapping of domain and temporary errors to HTTP (proxyfleet.api.http.errors)."""

from __future__ import annotations

import msgspec
import pytest

from proxyfleet.api.http.errors import EXCEPTION_HANDLERS
from proxyfleet.common.core.errors import (
    Conflict,
    DomainError,
    InvalidInput,
    MessagingUnavailable,
    NotFound,
    StoreUnavailable,
    TemporaryError,
    TemporaryProviderError,
    Unavailable,
)


def answer(exc: Exception) -> tuple[int, dict[str, str], str | None]:
    """(status, body, Retry-After) of the handler Litestar picks (the first class of the
    exception's MRO that has one)."""
    handler = next(EXCEPTION_HANDLERS[c] for c in type(exc).__mro__ if c in EXCEPTION_HANDLERS)
    response = handler(None, exc)  # type: ignore[arg-type]
    body = msgspec.to_builtins(response.content)
    assert response.status_code is not None
    return response.status_code, body, response.headers.get("Retry-After")


@pytest.mark.parametrize(
    ("exc", "status", "code", "retry_after"),
    [
        (InvalidInput("bad zone", code="unknown_zone"), 400, "unknown_zone", None),
        (InvalidInput("bad label"), 400, "invalid_input", None),
        (DomainError("refused"), 400, "bad_request", None),
        (NotFound("proxy p1 not found"), 404, "not_found", None),
        (Conflict("proxy p1 is leased", code="proxy_leased"), 409, "proxy_leased", None),
        (Conflict("cooling down", retry_after=2.2), 409, "conflict", "3"),
        (Unavailable("no proxy available", 0.1), 503, "unavailable", "1"),
    ],
)
def test_domain_errors_map_by_class_and_keep_their_code(
    exc: DomainError, status: int, code: str, retry_after: str | None
) -> None:
    assert answer(exc) == (status, {"error": code, "message": str(exc)}, retry_after)


def test_outages_are_503_with_retry_after() -> None:
    assert answer(StoreUnavailable("connection refused")) == (
        503,
        {"error": "store_unavailable", "message": "Redis is not reachable; try again"},
        "1",
    )
    status, body, retry_after = answer(MessagingUnavailable("no ack", retry_after=4))
    assert (status, body["error"], retry_after) == (503, "messaging_unavailable", "4")
    status, body, retry_after = answer(TemporaryError("the gateway is busy", retry_after=10))
    assert (status, body["error"], retry_after) == (503, "unavailable", "10")
    assert "the gateway is busy" in body["message"]
    assert answer(TemporaryProviderError("rate limited"))[0] == 503
