"""Each fault of the fake GCE drives the behaviour the issue lists, through the real
google-cloud-compute client: no duplicate VM after a retried insert, zone failover,
permanent quota failure with its message, temporary errors with their retry-after,
Google's message on permanent errors, the firewall reconciled on content, the sweeper."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from tests.contract.provider_contract import new_proxy_id
from tests.gcp.gcp_provider import instances_of, provider_for, spec_for, widen_by_hand

from proxyfleet.common.core.errors import PermanentProviderError, TemporaryProviderError
from proxyfleet.provisioner_gcp.adapter import GcpProvider
from proxyfleet.provisioner_gcp.metrics import ZONE_ERRORS

INSTALLATION = "faults"
Make = Callable[..., GcpProvider]


@pytest.fixture
async def make(fake_gce: Any) -> AsyncIterator[Make]:
    made: list[GcpProvider] = []

    def build(**overrides: Any) -> GcpProvider:
        made.append(provider_for(fake_gce, INSTALLATION, **overrides))
        return made[-1]

    yield build
    for p in made:
        await p.close()


async def test_an_insert_whose_answer_was_dropped_makes_exactly_one_vm(
    fake_gce: Any, make: Make
) -> None:
    fake_gce.inject("instances.insert", "dropped")
    spec = spec_for(new_proxy_id(), INSTALLATION)
    done = await make().create(spec)
    [vm] = instances_of(fake_gce, spec.proxy_id)
    assert vm["natIP"] == done.host
    assert fake_gce.calls["instances.insert"] == 2  # the retry, with the same requestId


async def test_a_dropped_insert_retried_by_a_redelivery_adopts(fake_gce: Any, make: Make) -> None:
    fake_gce.inject("instances.insert", "dropped", times=2)
    spec = spec_for(new_proxy_id(), INSTALLATION)
    with pytest.raises(TemporaryProviderError, match="no answer"):
        await make().create(spec)
    done = await make().create(spec)  # the intent's next delivery, maybe another replica
    assert [vm["natIP"] for vm in instances_of(fake_gce, spec.proxy_id)] == [done.host]


async def test_an_exhausted_zone_moves_an_unpinned_proxy_to_the_next(
    fake_gce: Any, make: Make
) -> None:
    before = ZONE_ERRORS.labels("us-central1-a", "capacity")._value.get()
    fake_gce.inject("instances.insert", "ZONE_RESOURCE_POOL_EXHAUSTED", zone="us-central1-a")
    spec = spec_for(new_proxy_id(), INSTALLATION, zone="us-a")
    done = await make().create(spec)
    [vm] = instances_of(fake_gce, spec.proxy_id)
    assert vm["zone"] == "us-central1-b"
    assert done.resource_id.startswith("us-central1-b/")
    assert done.zone == "us-b"  # the provider zone the runner records for the proxy
    assert ZONE_ERRORS.labels("us-central1-a", "capacity")._value.get() == before + 1
    again = await make().create(spec)  # a redelivery adopts it where it went
    assert (again.resource_id, again.zone) == (done.resource_id, "us-b")


async def test_a_pinned_proxy_waits_for_its_zone(fake_gce: Any, make: Make) -> None:
    fake_gce.inject(
        "instances.insert", "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", zone="us-central1-a"
    )
    spec = spec_for(new_proxy_id(), INSTALLATION, zone="us-a", pin_zone="true")
    with pytest.raises(TemporaryProviderError) as caught:
        await make().create(spec)
    assert caught.value.retry_after == 60.0
    assert instances_of(fake_gce, spec.proxy_id) == []


async def test_a_quota_exceeded_is_permanent_with_the_quotas_name(
    fake_gce: Any, make: Make
) -> None:
    before = ZONE_ERRORS.labels("us-central1-a", "quota")._value.get()
    fake_gce.inject("instances.insert", "QUOTA_EXCEEDED", quota="CPUS", limit=8)
    spec = spec_for(new_proxy_id(), INSTALLATION)
    with pytest.raises(PermanentProviderError, match=r"quota compute\.googleapis\.com/cpus") as e:
        await make().create(spec)
    assert "Quota 'CPUS' exceeded" in str(e.value)
    assert ZONE_ERRORS.labels("us-central1-a", "quota")._value.get() == before + 1


@pytest.mark.parametrize(
    ("fault", "retry_after"),
    [
        ("rateLimitExceeded", 10.0),
        ("RESOURCE_EXHAUSTED", 10.0),
        ("UNAVAILABLE", None),
        ("CONCURRENT_OPERATIONS_QUOTA_EXCEEDED", 15.0),
    ],
)
async def test_temporary_faults_are_retried_later(
    fake_gce: Any, make: Make, fault: str, retry_after: float | None
) -> None:
    fake_gce.inject("instances.insert", fault, times=5)
    spec = spec_for(new_proxy_id(), INSTALLATION)
    with pytest.raises(TemporaryProviderError) as caught:
        await make().create(spec)
    assert caught.value.retry_after == retry_after or (
        # the fake's own Retry-After header, when it sends one
        retry_after is not None and caught.value.retry_after is not None
    )


async def test_a_missing_permission_is_permanent_with_googles_message(
    fake_gce: Any, make: Make
) -> None:
    fake_gce.inject("instances.insert", "forbidden")
    with pytest.raises(PermanentProviderError, match="Required '"):
        await make().create(spec_for(new_proxy_id(), INSTALLATION))


async def test_a_missing_image_family_is_permanent(fake_gce: Any, make: Make) -> None:
    with pytest.raises(PermanentProviderError, match=r"no-such-family|not found"):
        await make(image_family="no-such-family").create(spec_for(new_proxy_id(), INSTALLATION))


async def test_slow_operations_are_waited_on(fake_gce: Any, make: Make) -> None:
    fake_gce.inject("instances.insert", "slow", seconds=1.5)
    spec = spec_for(new_proxy_id(), INSTALLATION)
    await make().create(spec)
    assert fake_gce.calls.get("zoneOperations.wait", 0) >= 1


async def test_the_firewall_rule_is_corrected_when_its_content_differs(
    fake_gce: Any, make: Make
) -> None:
    provider = make()
    await provider.create(spec_for(new_proxy_id(), INSTALLATION))
    [rule] = fake_gce.firewalls()
    assert rule["sourceRanges"] == ["127.0.0.0/8"]
    await widen_by_hand(fake_gce)
    await provider.create(spec_for(new_proxy_id(), INSTALLATION))  # checked after each create
    [rule] = fake_gce.firewalls()
    assert rule["sourceRanges"] == ["127.0.0.0/8"]
    assert rule["allowed"] == [{"IPProtocol": "tcp", "ports": ["3128"]}]
    await widen_by_hand(fake_gce)  # the same edit again needs the same correction again
    await make().create(spec_for(new_proxy_id(), INSTALLATION))  # a restarted provisioner
    assert fake_gce.firewalls()[0]["sourceRanges"] == ["127.0.0.0/8"]
    assert fake_gce.calls.get("firewalls.patch", 0) == 4  # ours and the test's, twice


async def test_the_sweeper_reports_then_deletes_old_orphans(fake_gce: Any, make: Make) -> None:
    labels = {"proxyfleet-installation": INSTALLATION, "proxyfleet-provider": "gcp"}
    fake_gce.add_address("us-central1", "pf-leaked", labels)
    fake_gce.add_address("us-central1", "someone-elses", {"team": "x"})
    provider = make(sweep_dry_run=True, sweep_min_age=0.001)
    spec = spec_for(new_proxy_id(), INSTALLATION)
    await provider.create(spec)
    await provider.delete(spec.proxy_id, "")
    await provider.list_managed()
    report = {(o.kind, o.name) for o in provider.sweeper.last_report}
    assert ("address", "pf-leaked") in report
    assert ("firewall", provider.firewall.rule.name) in report
    assert len(fake_gce.addresses()) == 2  # dry run: nothing deleted
    real = make(sweep_min_age=0.001)
    await real.list_managed()
    assert [a["name"] for a in fake_gce.addresses()] == ["someone-elses"]
    assert fake_gce.firewalls() == []
    assert [d for d in fake_gce.disks() if d.get("labels", {}).get("proxyfleet-installation")] == []


async def test_a_synchronous_quota_refusal_is_permanent_with_the_quotas_name(
    fake_gce: Any, make: Make
) -> None:
    fake_gce.inject("instances.insert", "quotaExceeded", quota="IN_USE_ADDRESSES")
    with pytest.raises(PermanentProviderError, match="quota IN_USE_ADDRESSES exceeded"):
        await make().create(spec_for(new_proxy_id(), INSTALLATION))


async def test_a_read_is_not_retried_by_the_client(fake_gce: Any, make: Make) -> None:
    """The client would retry a 503 on a read for up to 600 s; the runner's backoff does."""
    provider = make()
    before = fake_gce.calls.get("instances.aggregatedList", 0)
    fake_gce.inject("instances.aggregatedList", "UNAVAILABLE", times=1)
    with pytest.raises(TemporaryProviderError):
        await provider.instances()
    assert fake_gce.calls.get("instances.aggregatedList", 0) == before + 1
    assert await provider.instances() == []
