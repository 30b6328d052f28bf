# Proxyfleet: `make run` starts the whole system on this machine, `make test` tests it.
SHELL := /bin/bash
UV ?= $(shell command -v uv 2>/dev/null || echo python3 -m uv)
export UV_LINK_MODE ?= copy
# mypy's search path: every workspace member's src folder, found by pattern, so a new
# package (a provider's, say) needs no edit here or in pyproject.toml.
EMPTY :=
MYPYPATH := $(subst $(EMPTY) $(EMPTY),:,$(wildcard libs/*/src services/*/src tools/*/src \
	clients/*/src bench/src))

.PHONY: run test lint fmt setup uv-installed build-packages proxy-packages kvm-packages \
	system-packages browser-packages upstream-packages sentinel-packages bench bench-packages peer-packages clean generate test-integration-kvm test-integration-gcp test-integration-k8s test-fast asyncapi crd test-faults test-deploy

# Debian packages, each installed once: apt runs only for those dpkg does not list as installed.
BUILD_PACKAGES := libvirt-dev pkg-config
KVM_PACKAGES := libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients qemu-system-x86 \
	qemu-utils ovmf dnsmasq-base iptables iproute2
BROWSER_PACKAGES := chromium fonts-dejavu-core
UPSTREAM_PACKAGES := microsocks
SENTINEL_PACKAGES := redis-sentinel

# $(call apt-install,PACKAGES,WHAT): install the missing PACKAGES as root; otherwise say how.
define apt-install
	@missing=$$(for p in $(1); do \
		dpkg-query -W -f='$${db:Status-Status}' $$p 2>/dev/null | grep -qx installed || echo $$p; \
	done); \
	if [ -z "$$missing" ]; then :; \
	elif ! command -v apt-get >/dev/null; then \
		echo "$(2): not a Debian system; install the equivalents of:" $$missing; \
	elif [ "$$(id -u)" != 0 ]; then \
		echo "$(2): not root, so not installing:" $$missing "(run 'sudo make $@')"; \
	else \
		echo "installing" $$missing "($(2))"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends $$missing) >/dev/null 2>&1 \
		|| echo "$(2): apt-get could not install:" $$missing; \
	fi
endef

# uv bootstraps everything else. Debian's Python refuses --user installs (PEP 668) unless
# told otherwise; uv is one self-contained binary, so that is safe. `python3 -m uv` finds it
# wherever pip put it.
uv-installed:
	@$(UV) --version >/dev/null 2>&1 \
		|| python3 -m pip install --user --quiet uv \
		|| python3 -m pip install --user --quiet --break-system-packages uv

setup: uv-installed build-packages ## Install the workspace (all members and dev tools) from uv.lock
	$(UV) sync --all-packages --frozen

build-packages: ## libvirt-dev: `uv sync` builds libvirt-python (an sdist) against it
	$(call apt-install,$(BUILD_PACKAGES),libvirt-python's build dependencies)

proxy-packages: ## Squid for local proxies (optional: proxy.py is the fallback)
	@if ! command -v squid >/dev/null && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		echo "installing squid (local proxies use proxy.py until it is there)"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends squid) >/dev/null 2>&1 \
		|| echo "squid could not be installed: local proxies will use proxy.py"; \
	fi

# iptables: libvirt needs it for NAT (and isolated) networks; Debian's libvirt-daemon-system
# depends on it. Without it the KVM test fixture falls back to an open-mode network.
kvm-packages: ## libvirtd, QEMU, OVMF, dnsmasq: the KVM tests run a real libvirtd (as root)
	$(call apt-install,$(KVM_PACKAGES),the KVM tests)

# Debian's Chromium, driven by Playwright's bundled driver: `playwright install` would
# download a browser build of its own, which this project never does.
browser-packages: ## Chromium and a font: the dashboard tests (tests/ui) drive a real headless browser
	$(call apt-install,$(BROWSER_PACKAGES),the dashboard tests)

# The TLS upstream is Squid's https_port (proxy-packages): Debian's Squid has GnuTLS.
upstream-packages: ## microsocks: the SOCKS5 upstream the tests of brought proxies use (tests/upstreams)
	$(call apt-install,$(UPSTREAM_PACKAGES),the upstream proxy tests)

# Without it the tests run Sentinels as `redis-server --sentinel` (the same program).
sentinel-packages: ## redis-sentinel: the Redis-through-Sentinel and failover tests (tests/common/test_redis_sentinel.py)
	$(call apt-install,$(SENTINEL_PACKAGES),the Sentinel tests)

system-packages: build-packages proxy-packages kvm-packages browser-packages upstream-packages sentinel-packages ## Every Debian package the tests use

run: proxy-packages setup ## Start NATS, Redis, every service and the local provider
	$(UV) run --frozen proxyfleet-dev run

lint: setup ## ruff, mypy (strict), import contracts
	$(UV) run --frozen ruff check .
	$(UV) run --frozen ruff format --check .
	MYPYPATH=$(MYPYPATH) $(UV) run --frozen mypy libs services tools bench clients tests
	$(UV) run --frozen lint-imports

fmt: setup
	$(UV) run --frozen ruff check --fix .
	$(UV) run --frozen ruff format .

test: system-packages peer-packages setup lint ## Everything: lint, unit, store, services, end-to-end (random order)
	$(UV) run --frozen pytest --durations=30

test-fast: setup ## Seconds: the pure tests and the Redis store tests (markers set in tests/conftest.py)
	$(UV) run --frozen pytest -q -m "pure or store"

test-deploy: setup ## Seconds: render every deploy/ overlay (kubectl kustomize), validate it (kubernetes-validate --strict)
	$(UV) run --frozen pytest -q tests/deploy

test-integration-kvm: system-packages setup ## Opt-in: boot a real VM (image: PROXYFLEET_KVM_IMAGE) through the whole system
	PROXYFLEET_INTEGRATION_KVM=1 $(UV) run --frozen pytest -s --timeout 3600 tests/kvm/integration

test-integration-gcp: proxy-packages setup ## Opt-in: one spot e2-micro VM in PROXYFLEET_GCP_PROJECT through the whole system (costs < US$0.01)
	PROXYFLEET_INTEGRATION_GCP=1 $(UV) run --frozen pytest -s --timeout 1800 tests/gcp/integration

test-integration-k8s: setup ## Opt-in: the journey on a real cluster (KUBECONFIG; kind works), as a Job in it by default
	PROXYFLEET_INTEGRATION_K8S=1 $(UV) run --frozen pytest -s --timeout 1800 tests/k8s/integration/test_real_cluster.py

bench-packages: ## wrk, the C load generator the API benchmarks use
	@if ! command -v wrk >/dev/null && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		echo "installing wrk"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wrk) >/dev/null 2>&1 \
		|| echo "wrk could not be installed: the API benchmarks will say so"; \
	fi

peer-packages: ## proxy-chain from npm into .cache/peers (npm's cache then serves the tests offline)
	@if command -v npm >/dev/null; then \
		npm install --prefix .cache/peers/proxy-chain --no-audit --no-fund --loglevel=error proxy-chain@3 >/dev/null 2>&1 \
		|| echo "proxy-chain could not be installed: the bench marks its row missing"; \
	else echo "npm not found: the bench marks the proxy-chain row missing"; fi

bench: proxy-packages bench-packages peer-packages setup ## Measure the hot paths; writes docs/performance.md
	$(UV) run --frozen proxyfleet-bench run

asyncapi: setup ## Regenerate docs/asyncapi.yaml (every subject and body) from the code
	$(UV) run --frozen python -m proxyfleet.common.asyncapi docs/asyncapi.yaml

crd: setup ## Regenerate the ProxyPool CRD (deploy/kubernetes/core/proxypool-crd.yaml) from PoolSpec
	$(UV) run --frozen python -m proxyfleet.pool_operator.crd

generate: setup ## Regenerate the blocking Python client (clients/python/.../sync*.py) from its aio modules
	$(UV) run --frozen python tools/unasync.py

clean:
	rm -rf .dev .pytest_cache .mypy_cache .ruff_cache

test-faults: proxy-packages bench-packages setup ## The fault suite: kills, NATS and Redis outages under load, light and heavy (wrk); prints the tables
	PROXYFLEET_FAULTS=full PROXYFLEET_FAULTS_REPORT=.dev/faults-report.md \
		$(UV) run --frozen pytest -s -p no:randomly --timeout 1800 tests/faults
