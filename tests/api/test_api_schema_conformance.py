"""The API does what its OpenAPI document says: schemathesis reads the document the real
app serves on loopback and sends it requests for every operation (the coverage phase's
boundary and invalid values, other methods, missing parameters; then generated valid and
invalid ones), checking each answer: no server error, a documented status, content type,
headers and body, invalid input refused, a 405 with a right `Allow`.

Bounded for CI: the coverage phase's fixed set plus FUZZ_EXAMPLES per operation (about 600
requests), with a fixed seed."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from tests.api.helpers import ADMIN, PROVIDER, Api, ready_proxy

FUZZ_EXAMPLES = 5
SEED = 1

CONFIG = """
[checks.not_a_server_error]
# A 503 is documented (no proxy free, a backend down); any other 5xx is a failure.
expected-statuses = ["2xx", "3xx", "4xx", "503"]
"""

EXCLUDED_CHECKS = "positive_data_acceptance"
"""Input valid by the schema can still be refused by the domain (an unknown provider name,
a stale epoch); each route documents those 4xx."""


EXCLUDED_PATH = "/v1/events"
"""The event stream never ends by itself, so every request to it would time out; its
answers are tested in test_api_event_stream.py."""


def run_schemathesis(base_url: str, config: Path) -> subprocess.CompletedProcess[str]:
    argv = [
        *(sys.executable, "-m", "schemathesis.cli", "--config-file", str(config)),
        *("run", f"{base_url}/schema/openapi.json"),
        *("--header", f"Authorization: Bearer {ADMIN}"),
        *("--checks", "all", "--exclude-checks", EXCLUDED_CHECKS),
        *("--exclude-path", EXCLUDED_PATH),
        *("--phases", "examples,coverage,fuzzing"),
        *("--max-examples", str(FUZZ_EXAMPLES), "--seed", str(SEED)),
        *("--workers", "1", "--request-timeout", "10", "--continue-on-failure", "--no-color"),
    ]
    # From the config's folder: schemathesis keeps its crash cache (.schemathesis/) in the
    # working directory, which must not be the checkout.
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=300, check=False, cwd=config.parent
    )


async def test_every_operation_answers_as_documented(api: Api, tmp_path: Path) -> None:
    # proxies to grant, so the grant's 201 body is checked too
    for i in range(8):
        await ready_proxy(api, f"sch{i}", provider=PROVIDER, port=3100 + i)
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    done = await asyncio.to_thread(run_schemathesis, api.url, config)
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    assert "26 selected / 27 total" in report, report  # GET /echo and /v1/usage included
