# Proxyfleet: `make run` starts the whole system on this machine, `make test` tests it.
SHELL := /bin/bash
UV ?= $(shell command -v uv 2>/dev/null || echo python3 -m uv)
export UV_LINK_MODE ?= copy

.PHONY: run test lint fmt setup uv-installed system-packages bench bench-packages clean

# uv bootstraps everything else. Debian's Python refuses --user installs (PEP 668) unless
# told otherwise; uv is one self-contained binary, so that is safe. `python3 -m uv` finds it
# wherever pip put it.
uv-installed:
	@$(UV) --version >/dev/null 2>&1 \
		|| python3 -m pip install --user --quiet uv \
		|| python3 -m pip install --user --quiet --break-system-packages uv

setup: uv-installed ## Install the workspace (all members and dev tools) from uv.lock
	$(UV) sync --all-packages --frozen

system-packages: ## Squid for local proxies (optional: proxy.py is the fallback)
	@if ! command -v squid >/dev/null && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		echo "installing squid (local proxies use proxy.py until it is there)"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends squid) >/dev/null 2>&1 \
		|| echo "squid could not be installed: local proxies will use proxy.py"; \
	fi

run: setup system-packages ## Start NATS, Redis, every service and the local provider
	$(UV) run --frozen proxyfleet-dev run

lint: setup ## ruff, mypy (strict), import contracts
	$(UV) run --frozen ruff check .
	$(UV) run --frozen ruff format --check .
	$(UV) run --frozen mypy libs services tools bench tests
	$(UV) run --frozen lint-imports

fmt: setup
	$(UV) run --frozen ruff check --fix .
	$(UV) run --frozen ruff format .

test: setup system-packages lint ## Everything: lint, unit, store, services, end-to-end
	$(UV) run --frozen pytest

bench-packages: ## wrk, the C load generator the API benchmarks use
	@if ! command -v wrk >/dev/null && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		echo "installing wrk"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wrk) >/dev/null 2>&1 \
		|| echo "wrk could not be installed: the API benchmarks will say so"; \
	fi

bench: setup system-packages bench-packages ## Measure the hot paths; writes docs/performance.md
	$(UV) run --frozen proxyfleet-bench run

clean:
	rm -rf .dev .pytest_cache .mypy_cache .ruff_cache
