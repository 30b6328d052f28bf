"""Building the GCP adapter against the fake GCE (tests/gcp/fake_gce) for the tests here."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import msgspec
from google.cloud import compute_v1

from proxyfleet.common.wire.models import ProxySpec
from proxyfleet.provisioner_gcp.adapter import GcpProvider
from proxyfleet.provisioner_gcp.pure.config import GcpSettings

PROVIDER = "gcp"
ZONES = {"us-a": "us-central1-a", "us-b": "us-central1-b", "eu": "europe-west1-b"}
SECRET_PASSWORD_PREFIX = "pw-never-logged-"


def settings_for(fake: Any, **overrides: Any) -> GcpSettings:
    values: dict[str, Any] = {
        "project": fake.project,
        "zones": dict(ZONES),
        "source_ranges": ["127.0.0.0/8"],
        "api_endpoint": fake.endpoint,
        "anonymous": True,
        "spot": True,
        "connect_ports": [443],
        "sweep_min_age": 60.0,
    }
    values.update(overrides)
    return msgspec.convert(values, GcpSettings)


def provider_for(fake: Any, installation_id: str, **overrides: Any) -> GcpProvider:
    return GcpProvider(
        settings_for(fake, **overrides), installation_id, PROVIDER, address_poll_interval=0.05
    )


def spec_for(
    proxy_id: str, installation_id: str, zone: str = "us-a", **placement: str
) -> ProxySpec:
    return ProxySpec(
        proxy_id=proxy_id,
        installation_id=installation_id,
        zone=zone,
        username=f"u{secrets.token_hex(3)}",
        password=SECRET_PASSWORD_PREFIX + secrets.token_hex(8),
        placement=dict(placement),
    )


def instances_of(fake: Any, proxy_id: str) -> list[dict[str, Any]]:
    return [i for i in fake.instances() if i["labels"].get("proxyfleet-proxy") == proxy_id]


async def widen_by_hand(fake: Any) -> None:
    """An operator opens the rule to the world (and the patch's operation lands)."""
    compute_v1.FirewallsClient(**fake.client_kwargs()).patch_unary(
        project=fake.project,
        firewall=fake.firewalls()[0]["name"],
        firewall_resource=compute_v1.Firewall(source_ranges=["0.0.0.0/0"]),
    )
    for _ in range(100):  # the test's own patch is an operation too
        if fake.firewalls()[0]["sourceRanges"] == ["0.0.0.0/0"]:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the hand-made patch did not land")
