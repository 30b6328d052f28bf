"""proxyfleet-provisioner-k8s: not built yet (issue 11)."""

from __future__ import annotations

import sys


def main() -> None:
    sys.exit("proxyfleet-provisioner-k8s: not available in this release yet")
