"""The settings tables of docs/configuration.md are the ones the settings dataclasses
generate, so they match every command's --help. Run this file as a script to rewrite them:
`.venv/bin/python tests/common/test_configuration_doc.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from proxyfleet.api.main import SERVICE as API
from proxyfleet.common.host import Service
from proxyfleet.common.host.command import all_options
from proxyfleet.common.host.docs import BEGIN, END, settings_tables
from proxyfleet.gateway.main import SERVICE as GATEWAY
from proxyfleet.gc.main import SERVICE as GC
from proxyfleet.health.main import SERVICE as HEALTH
from proxyfleet.pool_operator.main import SERVICE as POOL_OPERATOR
from proxyfleet.pools.main import SERVICE as POOLS
from proxyfleet.provisioner_gcp.main import SERVICE as GCP
from proxyfleet.provisioner_k8s.main import SERVICE as K8S
from proxyfleet.provisioner_kvm.main import SERVICE as KVM
from proxyfleet.provisioner_local.main import SERVICE as LOCAL
from proxyfleet.provisioner_static.main import SERVICE as STATIC

CONFIGURATION = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
SERVICES: list[Service[Any]] = [
    API, LOCAL, KVM, GCP, K8S, STATIC, HEALTH, GC, POOLS, GATEWAY, POOL_OPERATOR,
]  # fmt: skip


def current_block(text: str) -> str:
    start = text.index(BEGIN)
    return text[start : text.index(END, start) + len(END)]


def test_the_settings_tables_are_the_generated_ones() -> None:
    assert current_block(CONFIGURATION.read_text()) == settings_tables(SERVICES), (
        "docs/configuration.md settings tables are stale: "
        "run .venv/bin/python tests/common/test_configuration_doc.py"
    )


def test_every_env_name_documented_before_is_still_read() -> None:
    before = {
        "api": "NATS_URL REDIS_URL PROXYFLEET_INSTALLATION_ID PROXYFLEET_REDIS_NAMESPACE "
        "PROXYFLEET_PROVIDERS_CONFIG PROXYFLEET_LOG_LEVEL PROXYFLEET_LOG_FORMAT "
        "PROXYFLEET_API_HOST PROXYFLEET_API_PORT PROXYFLEET_ADMIN_TOKENS PROXYFLEET_CLIENT_TOKENS "
        "PROXYFLEET_INSECURE_DEV PROXYFLEET_LEASE_COOLDOWN PROXYFLEET_MAX_LEASE_TTL "
        # PROXYFLEET_API_BENCH_ROUTES is gone on purpose: the bench mounts its own routes.
        "PROXYFLEET_DEFAULT_LEASE_TTL PROXYFLEET_BAN_SECONDS PROXYFLEET_SWEEP_INTERVAL",
        "gc": "PROXYFLEET_GC_INTERVAL PROXYFLEET_GC_MIN_AGE PROXYFLEET_GC_DRY_RUN "
        "PROXYFLEET_GC_MAX_DELETIONS PROXYFLEET_GC_REQUEST_TIMEOUT PROXYFLEET_GC_METRICS_HOST "
        "PROXYFLEET_GC_METRICS_PORT PROXYFLEET_GC_ONCE",
        "health": "PROXYFLEET_HEALTH_TARGET PROXYFLEET_HEALTH_CA_FILE PROXYFLEET_HEALTH_INTERVAL "
        "PROXYFLEET_HEALTH_TIMEOUT PROXYFLEET_HEALTH_CONCURRENCY PROXYFLEET_HEALTH_CLAIM_BATCH "
        "PROXYFLEET_HEALTH_TICK PROXYFLEET_HEALTH_WRITERS PROXYFLEET_HEALTH_STATS_INTERVAL "
        "PROXYFLEET_METRICS_HOST PROXYFLEET_METRICS_PORT PROXYFLEET_HEALTH_UNHEALTHY_AFTER "
        "PROXYFLEET_HEALTH_READY_AFTER PROXYFLEET_HEALTH_LOOP PROXYFLEET_HEALTH_TLS_RESUME_FOR",
        "provisioner-local": "PROXYFLEET_PROVIDER PROXYFLEET_METRICS_PORT "
        "PROXYFLEET_RECONCILE_INTERVAL PROXYFLEET_STALE_AFTER PROXYFLEET_ACK_WAIT "
        "PROXYFLEET_CONCURRENCY",
        "provisioner-kvm": "PROXYFLEET_PROVIDER PROXYFLEET_METRICS_PORT "
        "PROXYFLEET_RECONCILE_INTERVAL PROXYFLEET_STALE_AFTER PROXYFLEET_ACK_WAIT "
        "PROXYFLEET_CONCURRENCY PROXYFLEET_LIBVIRT_TRACE",
        "provisioner-gcp": "PROXYFLEET_PROVIDER PROXYFLEET_METRICS_PORT "
        "PROXYFLEET_RECONCILE_INTERVAL PROXYFLEET_STALE_AFTER PROXYFLEET_ACK_WAIT "
        "PROXYFLEET_CONCURRENCY",
        "provisioner-k8s": "PROXYFLEET_PROVIDER PROXYFLEET_METRICS_PORT "
        "PROXYFLEET_RECONCILE_INTERVAL PROXYFLEET_STALE_AFTER PROXYFLEET_ACK_WAIT "
        "PROXYFLEET_CONCURRENCY",
        "gateway": "PROXYFLEET_GATEWAY_HOST PROXYFLEET_GATEWAY_PORT PROXYFLEET_CLIENT_TOKENS "
        "PROXYFLEET_LEASE_COOLDOWN PROXYFLEET_MAX_LEASE_TTL PROXYFLEET_BAN_SECONDS",
    }
    for service in SERVICES:
        read = {env for spec in all_options(service) for env in spec.envvars}
        common = set(before["api"].split()[:7])
        assert set(before.get(service.name, "").split()) | common <= read, service.name


def main() -> None:
    text = CONFIGURATION.read_text()
    CONFIGURATION.write_text(text.replace(current_block(text), settings_tables(SERVICES)))


if __name__ == "__main__":
    main()
