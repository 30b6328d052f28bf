"""Exit addresses of GCP proxies, through the real client against the fake GCE and real
Squids: a VM with an ephemeral external IP leaves from that IP (no two proxies share one);
VMs without one (`external_ip: false`) leave through their network's Cloud NAT, and the
echo target sees one address for all of them, which is what health then flags as shared."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from tests.conftest import TargetServer
from tests.contract.provider_contract import new_proxy_id
from tests.gcp.gcp_provider import instances_of, provider_for, spec_for

from proxyfleet.common.wire.models import Provisioned, ProxySpec
from proxyfleet.provisioner_gcp.adapter import GcpProvider

INSTALLATION = "egress"
Make = Callable[..., GcpProvider]


@pytest.fixture
async def make(fake_gce: Any, target: TargetServer) -> AsyncIterator[Make]:
    made: list[GcpProvider] = []

    def build(**overrides: Any) -> GcpProvider:
        made.append(provider_for(fake_gce, INSTALLATION, connect_ports=[target.port], **overrides))
        return made[-1]

    yield build
    for p in made:
        await p.close()


def _echoed(spec: ProxySpec, got: Provisioned, target: TargetServer) -> str:
    """The address the echo target saw a request through this proxy come from."""
    proxy = f"http://{spec.username}:{spec.password}@{got.host}:{got.port}"
    tls = ssl.create_default_context(cafile=target.ca_file)
    with httpx.Client(proxy=proxy, verify=tls, timeout=10) as http:
        answer = http.get(target.url)
    assert answer.status_code == 200
    ip = answer.json()["ip"]
    assert isinstance(ip, str)
    return ip


async def _create_two(provider: GcpProvider) -> list[tuple[ProxySpec, Provisioned]]:
    specs = [spec_for(new_proxy_id(), INSTALLATION) for _ in range(2)]
    made = await asyncio.gather(*(provider.create(s) for s in specs))
    return list(zip(specs, made, strict=True))


async def test_vms_with_external_ips_each_leave_from_their_own(
    fake_gce: Any, make: Make, target: TargetServer
) -> None:
    assert fake_gce.squid_available, "squid is a test dependency (make system-packages)"
    pairs = await _create_two(make())
    seen = [await asyncio.to_thread(_echoed, spec, got, target) for spec, got in pairs]
    # The exit address is the external IP the proxy is reached at, one per VM.
    assert seen == [got.host for _, got in pairs]
    assert len(set(seen)) == 2
    for spec, got in pairs:
        [listed] = instances_of(fake_gce, spec.proxy_id)
        assert listed["natIP"] == got.host


async def test_vms_without_external_ips_share_the_cloud_nat_address(
    fake_gce: Any, make: Make, target: TargetServer
) -> None:
    assert fake_gce.squid_available, "squid is a test dependency (make system-packages)"
    pairs = await _create_two(make(external_ip=False))
    hosts = [got.host for _, got in pairs]
    assert len(set(hosts)) == 2  # each reached at its own internal address
    for spec, _ in pairs:
        [listed] = instances_of(fake_gce, spec.proxy_id)
        assert listed["natIP"] is None  # no access config: no external IP at all
    seen = [await asyncio.to_thread(_echoed, spec, got, target) for spec, got in pairs]
    assert seen == [fake_gce.settings.cloud_nat_address] * 2
    assert not set(seen) & set(hosts)
