"""Building the GCP adapter against the fake GCE (tests/gcp/fake_gce) for the tests here."""

from __future__ import annotations

import secrets
from typing import Any

import msgspec

from proxyfleet.common.gcp_config import GcpSettings
from proxyfleet.common.models import ProxySpec
from proxyfleet.provisioner_gcp.adapter import GcpProvider

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
