"""Opt-in: collected only with PROXYFLEET_INTEGRATION_KVM=1 (`make test-integration-kvm`):
these tests boot a real guest, which takes minutes under TCG."""

from __future__ import annotations

import os

collect_ignore_glob = [] if os.environ.get("PROXYFLEET_INTEGRATION_KVM") == "1" else ["test_*.py"]
