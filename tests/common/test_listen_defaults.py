"""Every service listens on loopback unless told otherwise: its API or its /healthz,
/readyz and /metrics server (deploy/ passes 0.0.0.0 where pods are scraped; see
tests/deploy)."""

from __future__ import annotations

from tests.common.test_configuration_doc import SERVICES

from proxyfleet.common.host.command import all_options


def test_every_listening_address_defaults_to_loopback() -> None:
    seen: dict[tuple[str, str], object] = {}
    for service in SERVICES:
        for spec in all_options(service):
            if spec.flag in ("--host", "--metrics-host"):
                seen[service.name, spec.flag] = spec.default
    assert seen == {
        ("api", "--host"): "127.0.0.1",
        ("provisioner-local", "--metrics-host"): "127.0.0.1",
        ("provisioner-kvm", "--metrics-host"): "127.0.0.1",
        ("provisioner-gcp", "--metrics-host"): "127.0.0.1",
        ("provisioner-k8s", "--metrics-host"): "127.0.0.1",
        ("provisioner-static", "--metrics-host"): "127.0.0.1",
        ("health", "--metrics-host"): "127.0.0.1",
        ("gc", "--metrics-host"): "127.0.0.1",
        ("pools", "--metrics-host"): "127.0.0.1",
        ("pool-operator", "--metrics-host"): "127.0.0.1",
        ("gateway", "--host"): "127.0.0.1",
        ("gateway", "--metrics-host"): "127.0.0.1",
    }
