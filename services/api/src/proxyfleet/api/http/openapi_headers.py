"""Retry-After in the OpenAPI document of every 409 and 503: Litestar's `ResponseSpec`
(how `errors.error_responses` declares error answers) carries no headers, so they are
added to the generated document once, when the app is built."""

from __future__ import annotations

from litestar import Litestar
from litestar._openapi.plugin import OpenAPIPlugin
from litestar.openapi.spec import OpenAPIHeader, OpenAPIResponse, OpenAPIType, Schema

RETRY_AFTER = OpenAPIHeader(
    schema=Schema(type=OpenAPIType.INTEGER, minimum=1),
    description=(
        "Seconds to wait before trying again: until the soonest cooldown or lease ends, or "
        "an outage's retry hint. Absent when waiting cannot help (a stale epoch, a reused "
        "Idempotency-Key)."
    ),
    required=False,
)
WITH_RETRY_AFTER = ("409", "503")


def document_retry_after(app: Litestar) -> int:
    """Add the header to every 409 and 503 of `app`'s document; how many were changed."""
    openapi = app.plugins.get(OpenAPIPlugin).provide_openapi()  # built once, then cached
    changed = 0
    for item in (openapi.paths or {}).values():
        for op in (item.get, item.put, item.post, item.patch, item.delete):
            for code, response in ((op.responses or {}) if op else {}).items():
                if code in WITH_RETRY_AFTER and isinstance(response, OpenAPIResponse):
                    response.headers = {**(response.headers or {}), "Retry-After": RETRY_AFTER}
                    changed += 1
    return changed
