#!/usr/bin/env bash
# The minute-long measurement of docs/scaling.md: three health replicas share the probes
# of PROXIES proxies (default 60) at the default probe interval (5 s) over WINDOW seconds
# (default 60), next to three provisioners and two APIs. Prints the creates by
# provisioner, the claims and shares by health replica, the probe gaps and the grants.
#   bench/scaling.sh [WINDOW] [PROXIES] [INTERVAL]
set -euo pipefail
cd "$(dirname "$0")/.."
export PROXYFLEET_SCALING_WINDOW="${1:-60}" PROXYFLEET_SCALING_PROXIES="${2:-60}"
export PROXYFLEET_SCALING_INTERVAL="${3:-5}"
mkdir -p .dev
uv run --frozen pytest -s -q -p no:randomly tests/scaling -k share 2>&1 | tee .dev/scaling.log \
  | grep -E "creates by|probes by|probe gaps|grants:|passed|failed|Error"
