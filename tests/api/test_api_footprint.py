"""What building the app imports, in a fresh interpreter: no test-data generators. Litestar
makes OpenAPI examples for a ResponseSpec with polyfactory and Faker unless told not to,
and their import alone added about 60 MB to the API's resident memory (133 -> 83 MB)."""

from __future__ import annotations

import json
import subprocess
import sys

BUILD = """
import json, sys
from tests.api.helpers import api_settings, providers_config
from proxyfleet.api.app import create_app
from proxyfleet.api.deps import AppDeps
app = create_app(api_settings("redis://127.0.0.1:1/0", "nats://127.0.0.1:1"),
                 AppDeps(providers=providers_config()))
app.openapi_schema  # built at start-up too (the Retry-After headers are added to it)
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def test_building_the_app_imports_no_example_generators() -> None:
    done = subprocess.run(
        [sys.executable, "-c", BUILD], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "litestar" in loaded  # it did build the app
    assert not loaded & {"faker", "polyfactory"}
