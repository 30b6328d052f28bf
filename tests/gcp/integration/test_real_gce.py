"""One spot e2-micro proxy in a real Google Cloud project, through the whole system: the
API asks for a `gcp` proxy, provisioner-gcp (a process) creates the VM with cloud-init,
health probes it with a real CONNECT + TLS through Squid on its external IP, a client
leases it and fetches a page through it, the delete removes the VM, and afterwards nothing
of this installation is left (instances, disks, the firewall rule once GC swept it).

Env: PROXYFLEET_GCP_PROJECT (required); credentials by Application Default Credentials
(GOOGLE_APPLICATION_CREDENTIALS=key.json, or `gcloud auth application-default login`);
PROXYFLEET_GCP_ZONE (default us-central1-a); PROXYFLEET_GCP_SOURCE_RANGES (comma-separated
CIDRs allowed to reach the proxy; default this machine's public address /32, asked of
api.ipify.org). Cost of one run: under US$0.01 (docs/gcp-provider.md)."""

from __future__ import annotations

import os
import secrets
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import certifi
import httpx
import pytest
from google.cloud import compute_v1
from tests.e2e.journey import Api, wait_for

from proxyfleet.devstack.commands import service_bin
from proxyfleet.devstack.options import StackOptions
from proxyfleet.devstack.servers import free_port
from proxyfleet.devstack.stack import Stack
from proxyfleet.provisioner_gcp.pure import names

TARGET = "https://www.gstatic.com/generate_204"
pytestmark = pytest.mark.timeout(1800)


def _source_ranges() -> str:
    if value := os.environ.get("PROXYFLEET_GCP_SOURCE_RANGES"):
        return ", ".join(v.strip() for v in value.split(","))
    return f"{httpx.get('https://api.ipify.org', timeout=10).text.strip()}/32"


@pytest.fixture
def project() -> str:
    value = os.environ.get("PROXYFLEET_GCP_PROJECT")
    if not value:
        pytest.fail("set PROXYFLEET_GCP_PROJECT (and credentials: see the module docstring)")
    return value


@pytest.fixture
def stack(tmp_path: Path, project: str) -> Iterator[Stack]:
    zone = os.environ.get("PROXYFLEET_GCP_ZONE", "us-central1-a")
    installation = f"it-gcp-{secrets.token_hex(3)}"
    provider = f"""  - name: gcp
    type: gcp
    zones: [it]
    boot_timeout: 600
    gcp:
      project: {project}
      zones: {{it: {zone}}}
      source_ranges: [{_source_ranges()}]
      machine_type: e2-micro
      spot: true
      sweep_min_age: 1
      sweep_interval: 1
"""
    tmp_path.chmod(0o711)
    opts = StackOptions.on_free_ports(
        base_dir=tmp_path / "stack",
        health_interval=5.0,
        gc_interval=5.0,
        gc_min_age=60.0,
        boot_timeout=600.0,
        installation_id=installation,
        extra_providers=provider,
        extra_services={
            "provisioner-gcp": [
                service_bin("proxyfleet-provisioner-gcp"),
                "--provider",
                "gcp",
                "--metrics-port",
                str(free_port()),
            ]
        },
        # The probe goes to a public target (the VM cannot reach this machine's loopback).
        extra_args={"health": ["--target", TARGET, "--ca-file", certifi.where()]},
        echo=None,
    )
    s = Stack(opts)
    try:
        s.start()
        yield s
    finally:
        s.stop()


def test_a_real_spot_vm_is_a_proxy(stack: Stack, project: str) -> None:
    admin = Api(stack.api_url, stack.admin_token)
    client = Api(stack.api_url, stack.client_token)
    started = time.monotonic()
    r = admin.http.post("/v1/proxies", json={"provider": "gcp", "count": 1})
    assert r.status_code == 202, r.text
    [proxy_id] = [p["id"] for p in r.json()["items"]]
    wait_for("the proxy ready", lambda: admin.proxy(proxy_id)["phase"] == "ready", timeout=900)
    print(f"\nready after {time.monotonic() - started:.0f} s")

    lease = client.http.post("/v1/leases", json={"ttl": 120, "holder": "it-gcp"}).json()
    ctx = ssl.create_default_context(cafile=certifi.where())
    with httpx.Client(proxy=lease["proxy"]["url"], verify=ctx, timeout=30) as via:
        assert via.get(TARGET).status_code == 204
    client.http.post(f"/v1/leases/{lease['lease_id']}/release", json={"epoch": lease["epoch"]})

    assert admin.http.delete(f"/v1/proxies/{proxy_id}", params={"force": "true"}).is_success
    wait_for("deleted", lambda: admin.proxy(proxy_id)["phase"] == "deleted", timeout=600)

    inst = stack.opts.installation_id
    flt = names.installation_filter(inst, "gcp")
    instances = compute_v1.InstancesClient()
    disks = compute_v1.DisksClient()
    firewalls = compute_v1.FirewallsClient()

    def nothing_left() -> bool:
        vm_req = compute_v1.AggregatedListInstancesRequest(project=project, filter=flt)
        vms = [i for _, s in instances.aggregated_list(request=vm_req) for i in s.instances]
        disk_req = compute_v1.AggregatedListDisksRequest(project=project, filter=flt)
        left = [d for _, s in disks.aggregated_list(request=disk_req) for d in s.disks]
        rule = names.firewall_name(inst, "gcp")
        rules = [f for f in firewalls.list(project=project) if f.name == rule]
        return not vms and not left and not rules

    wait_for("nothing of this installation left", nothing_left, timeout=600)
