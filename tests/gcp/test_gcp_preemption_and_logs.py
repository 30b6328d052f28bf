"""A spot VM Google preempts is noticed and its proxy fails with that reason; and no
credential, cloud-init or metadata value reaches a log line at any level."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from tests.common.factories import make_proxy
from tests.contract.provider_contract import new_proxy_id
from tests.gcp.gcp_provider import instances_of, provider_for, spec_for

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.observability.logging import configure_logging
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Phase
from proxyfleet.provisioner_gcp.watcher import PreemptionWatcher

INSTALLATION = "preempt"


async def _booting(registry: ProxyRegistry, clock: ManualClock, proxy_id: str, rid: str) -> None:
    assert await registry.create(make_proxy(proxy_id, clock, provider="gcp", zone="us-a"))
    await registry.transition(proxy_id, Phase.PROVISIONING)
    await registry.transition(proxy_id, Phase.BOOTING, host="127.0.0.9", port=3128, resource_id=rid)


@pytest.mark.parametrize("action", ["DELETE", "STOP"])
async def test_a_preempted_spot_vm_fails_its_proxy_with_that_reason(
    fake_gce: Any, registry: ProxyRegistry, clock: ManualClock, action: str
) -> None:
    provider = provider_for(fake_gce, INSTALLATION)
    try:
        spec = spec_for(new_proxy_id(), INSTALLATION)
        kept = spec_for(new_proxy_id(), INSTALLATION)
        done = await provider.create(spec)
        other = await provider.create(kept)
        await _booting(registry, clock, spec.proxy_id, done.resource_id)
        await _booting(registry, clock, kept.proxy_id, other.resource_id)
        if action == "STOP":
            await _set_stop_action(fake_gce, spec.proxy_id)
        fake_gce.preempt(instances_of(fake_gce, spec.proxy_id)[0]["name"])
        watcher = PreemptionWatcher(provider, registry, "gcp", interval=1.0)
        assert await watcher.check_once() == 1
        failed = await registry.get(spec.proxy_id)
        assert failed is not None
        assert failed.phase is Phase.FAILED
        assert "preempted" in failed.reason
        still = await registry.get(kept.proxy_id)
        assert still is not None
        assert still.phase is Phase.BOOTING
        assert await watcher.check_once() == 0
    finally:
        await provider.close()


async def _set_stop_action(fake: Any, proxy_id: str) -> None:
    """Turn the VM's termination action to STOP in the fake (as a VM made with it would be)."""
    with fake.state.lock:
        for record in fake.state.instances.values():
            if record.body.get("labels", {}).get("proxyfleet-proxy") == proxy_id:
                record.body["scheduling"]["instanceTerminationAction"] = "STOP"


async def test_no_secret_reaches_any_log_line(
    fake_gce: Any, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    configure_logging("test", "debug", "json")
    caplog.set_level(logging.DEBUG)  # every library logger too, at every level
    provider = provider_for(fake_gce, INSTALLATION)
    try:
        spec = spec_for(new_proxy_id(), INSTALLATION)
        fake_gce.inject("instances.insert", "dropped")
        await provider.create(spec)
        fake_gce.inject("instances.insert", "QUOTA_EXCEEDED")
        with pytest.raises(Exception, match="Quota"):
            await provider.create(spec_for(new_proxy_id(), INSTALLATION))
        await provider.list_managed()
        [vm] = instances_of(fake_gce, spec.proxy_id)
        await provider.delete(spec.proxy_id, "")
    finally:
        await provider.close()
    out = capsys.readouterr().out + "\n".join(r.getMessage() for r in caplog.records)
    assert "gcp.instance_inserted" in out  # the capture saw the adapter's lines
    secrets = [
        spec.password,
        json.dumps({"username": spec.username, "password": spec.password}),
        "#cloud-config",
        "$2b$",
        "proxyfleet.htpasswd",
        *vm["metadata"].values(),
    ]
    for secret in secrets:
        assert secret not in out
