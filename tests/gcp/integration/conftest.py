"""Opt-in: collected only with PROXYFLEET_INTEGRATION_GCP=1 (`make test-integration-gcp`):
these tests create a real (spot e2-micro) VM in a real project, which costs money."""

from __future__ import annotations

import os

collect_ignore_glob = [] if os.environ.get("PROXYFLEET_INTEGRATION_GCP") == "1" else ["test_*.py"]
