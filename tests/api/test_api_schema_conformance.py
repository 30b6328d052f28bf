"""The API does what its OpenAPI document says: schemathesis generates requests for every
operation from the served document (valid ones and invalid ones), sends them to the real
app on loopback, and checks each answer: no 500, a documented status, a documented content
type and headers, a body valid against the documented schema, and invalid input refused.

Bounded for CI: EXAMPLES per operation and mode (a few hundred requests in all), the same
examples on every run (derandomized, no example database)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import hypothesis
import hypothesis.errors
import schemathesis
from hypothesis import HealthCheck
from schemathesis import GenerationMode
from schemathesis.core.result import Ok
from schemathesis.specs.openapi import checks
from tests.api.helpers import ADMIN, PROVIDER, Api, ready_proxy

EXAMPLES = 12
"""Per operation and generation mode: 13 operations x 2 modes x 12 is about 300 requests."""

CHECKS: list[Callable[..., Any]] = [
    schemathesis.checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_headers_conformance,
    checks.response_schema_conformance,
    checks.negative_data_rejection,
]
"""Not positive_data_acceptance: schema-valid input can still be refused by the domain
(an unknown provider name, a stale epoch), as documented by the 4xx of each route."""

CONFIG = schemathesis.Config.from_dict(
    {"checks": {"not_a_server_error": {"expected-statuses": ["2xx", "3xx", "4xx", "503"]}}}
)
"""A 503 is documented (no proxy free, a backend down) and not a server error; a 500 is."""


def conformance_failures(base_url: str) -> tuple[list[str], int]:
    """(failures, requests sent): the first failure of each operation and mode."""
    schema = schemathesis.openapi.from_url(f"{base_url}/schema/openapi.json", config=CONFIG)
    failures: list[str] = []
    sent = 0
    for result in schema.get_all_operations():
        if not isinstance(result, Ok):
            failures.append(f"an operation the document does not describe well: {result.err()}")
            continue
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @hypothesis.settings(
                max_examples=EXAMPLES,
                derandomize=True,
                database=None,
                deadline=None,
                phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @hypothesis.given(case=operation.as_strategy(generation_mode=mode))
            def check(case: schemathesis.Case[Any]) -> None:
                nonlocal sent
                sent += 1
                case.call_and_validate(
                    base_url=base_url,
                    headers={"Authorization": f"Bearer {ADMIN}"},
                    checks=CHECKS,
                    timeout=10,
                )

            try:
                check()
            except hypothesis.errors.Unsatisfiable:
                continue  # nothing to make invalid: no parameter, no body (/healthz)
            except (Exception, BaseExceptionGroup) as exc:  # one report each, then go on
                failures.append(f"{operation.label} ({mode.value}): {exc}")
    return failures, sent


async def test_every_operation_answers_as_documented(api: Api) -> None:
    # proxies to grant, so the grant's 201 body is checked too
    for i in range(8):
        await ready_proxy(api, f"sch{i}", provider=PROVIDER, port=3100 + i)
    failures, sent = await asyncio.to_thread(conformance_failures, api.url)
    print(f"schemathesis: {sent} requests")
    assert sent >= 100, sent
    assert not failures, "\n\n".join(failures)
