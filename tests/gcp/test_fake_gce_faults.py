"""Each injected fault surfaces as the real client shows Google's: an exception with
Google's reason, or an operation DONE with `error.errors[].code`."""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from google.api_core import exceptions as gexc
from google.cloud import compute_v1
from tests.gcp.fake_gce import FakeGce
from tests.gcp.gce_helpers import ZONE, clients, insert, instance, wait_done

Status = compute_v1.Operation.Status


def test_rate_limit_is_a_403_with_reason_rate_limit_exceeded(fake_gce: FakeGce) -> None:
    c = clients(fake_gce)
    fake_gce.inject("instances.insert", "rateLimitExceeded")
    fake_gce.inject("instances.insert", "rateLimitExceeded", retry_after=7)
    with pytest.raises(gexc.Forbidden) as caught:
        insert(c, fake_gce, instance("pf-r"))
    assert caught.value.code == 403
    assert caught.value.errors[0]["reason"] == "rateLimitExceeded"
    assert caught.value.errors[0]["domain"] == "usageLimits"
    assert caught.value.reason == "RATE_LIMIT_EXCEEDED"  # from the ErrorInfo detail
    assert "Retry-After" not in caught.value.response.headers  # Compute sends none
    with pytest.raises(gexc.Forbidden) as caught:
        insert(c, fake_gce, instance("pf-r"))
    assert caught.value.response.headers["Retry-After"] == "7"
    assert fake_gce.instances() == []  # the call did not land
    insert(c, fake_gce, instance("pf-r"))  # each fault was for one call
    assert fake_gce.calls["instances.insert"] == 3


def test_429_is_resource_exhausted(fake_gce: FakeGce) -> None:
    c = clients(fake_gce)
    fake_gce.inject("instances.insert", "RESOURCE_EXHAUSTED")
    with pytest.raises(gexc.TooManyRequests) as caught:
        insert(c, fake_gce, instance("pf-429"))
    assert caught.value.response.json()["error"]["status"] == "RESOURCE_EXHAUSTED"


def test_503_on_insert_raises_and_on_get_is_retried_by_the_client(fake_gce: FakeGce) -> None:
    c = clients(fake_gce)
    fake_gce.inject("instances.insert", "UNAVAILABLE")
    with pytest.raises(gexc.ServiceUnavailable):
        insert(c, fake_gce, instance("pf-503"))
    wait_done(c, fake_gce, insert(c, fake_gce, instance("pf-503")))
    # The client's default retry covers reads (ServiceUnavailable, DeadlineExceeded).
    fake_gce.inject("instances.get", "UNAVAILABLE", times=1)
    got = c.instances.get(project=fake_gce.project, zone=ZONE, instance="pf-503")
    assert got.name == "pf-503"
    assert fake_gce.calls["instances.get"] == 2


def test_a_missing_permission_is_a_403_forbidden_naming_it(fake_gce: FakeGce) -> None:
    c = clients(fake_gce)
    fake_gce.inject("firewalls.insert", "forbidden", permission="compute.firewalls.create")
    with pytest.raises(gexc.Forbidden, match=r"Required 'compute\.firewalls\.create' permission"):
        c.firewalls.insert_unary(
            project=fake_gce.project,
            firewall_resource=compute_v1.Firewall(
                name="pf-fw", allowed=[compute_v1.Allowed(I_p_protocol="tcp", ports=["3128"])]
            ),
        )


@pytest.mark.parametrize(
    "code", ["ZONE_RESOURCE_POOL_EXHAUSTED", "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"]
)
def test_zone_exhaustion_ends_the_operation_with_its_code_in_that_zone_only(
    fake_gce: FakeGce, code: str
) -> None:
    c = clients(fake_gce)
    fake_gce.inject("instances.insert", code, times=None, zone=ZONE)
    op = insert(c, fake_gce, instance("pf-z"))
    assert op.status != Status.DONE  # accepted: the failure comes with the operation
    op = wait_done(c, fake_gce, op)
    [error] = op.error.errors
    assert error.code == code
    assert f"zones/{ZONE}' does not have enough resources" in error.message
    assert op.http_error_status_code == 503
    assert error.error_details[1].error_info.reason == "resource_availability"
    assert error.error_details[1].error_info.metadatas["zone"] == ZONE
    assert fake_gce.instances() == []  # a failed insert leaves no instance, no disk
    assert fake_gce.disks() == []
    # Another zone has room.
    other = "us-central1-b"
    op = wait_done(
        c, fake_gce, insert(c, fake_gce, instance("pf-z", zone=other), zone=other), other
    )
    assert not op.error.errors
    assert [i["zone"] for i in fake_gce.instances()] == [other]


def test_quota_exceeded_names_the_quota_as_google_does(fake_gce: FakeGce) -> None:
    c = clients(fake_gce)
    fake_gce.inject("instances.insert", "QUOTA_EXCEEDED", quota="IN_USE_ADDRESSES", limit=8)
    op = wait_done(c, fake_gce, insert(c, fake_gce, instance("pf-q")))
    [error] = op.error.errors
    assert error.code == "QUOTA_EXCEEDED"
    assert error.message == "Quota 'IN_USE_ADDRESSES' exceeded.  Limit: 8.0 in region us-central1."
    assert error.error_details[0].quota_info.limit_name == "IN_USE_ADDRESSES-per-project-region"
    assert op.http_error_status_code == 403


def test_a_slow_operation_stays_running_past_a_wait(fake_gce: FakeGce) -> None:
    c = clients(fake_gce)
    fake_gce.settings.wait_timeout_s = 0.3
    fake_gce.inject("instances.insert", "slow", seconds=1.0)
    op = insert(c, fake_gce, instance("pf-slow"))
    started = time.monotonic()
    op = c.zone_ops.wait(project=fake_gce.project, zone=ZONE, operation=op.name)
    assert op.status == Status.RUNNING  # wait answers at its deadline, not DONE
    assert 0.25 < time.monotonic() - started < 1.0
    assert not wait_done(c, fake_gce, op).error.errors


def test_a_dropped_connection_after_the_insert_landed_then_a_retry_makes_one_vm(
    fake_gce: FakeGce,
) -> None:
    c = clients(fake_gce)
    request_id = str(uuid.uuid4())
    fake_gce.inject("instances.insert", "dropped")
    with pytest.raises(requests.exceptions.ConnectionError):
        insert(c, fake_gce, instance("pf-drop"), request_id)
    assert [i["name"] for i in fake_gce.instances()] == ["pf-drop"]  # it landed
    op = insert(c, fake_gce, instance("pf-drop"), request_id)  # the adapter's retry
    assert not wait_done(c, fake_gce, op).error.errors
    assert len(fake_gce.instances()) == 1
    assert fake_gce.calls["instances.insert"] == 2
    assert len([o for o in fake_gce.operations() if o["operationType"] == "insert"]) == 1


def test_a_fault_injected_for_times_n_hits_n_calls(fake_gce: FakeGce) -> None:
    c = clients(fake_gce)
    fake_gce.inject("instances.insert", "RESOURCE_EXHAUSTED", times=2)
    for _ in range(2):
        with pytest.raises(gexc.TooManyRequests):
            insert(c, fake_gce, instance("pf-n"))
    insert(c, fake_gce, instance("pf-n"))
    with pytest.raises(ValueError, match="fault 'nope'"):
        fake_gce.inject("instances.insert", "nope")


def test_operation_errors_on_delete_leave_the_instance(fake_gce: FakeGce) -> None:
    c = clients(fake_gce)
    wait_done(c, fake_gce, insert(c, fake_gce, instance("pf-d")))
    fake_gce.inject("instances.delete", "CONCURRENT_OPERATIONS_QUOTA_EXCEEDED")
    op = c.instances.delete_unary(project=fake_gce.project, zone=ZONE, instance="pf-d")
    op = wait_done(c, fake_gce, op)
    assert op.error.errors[0].code == "CONCURRENT_OPERATIONS_QUOTA_EXCEEDED"
    assert [i["name"] for i in fake_gce.instances()] == ["pf-d"]


def test_a_synchronous_quota_error_names_the_quota(fake_gce: FakeGce) -> None:
    c = clients(fake_gce)
    fake_gce.inject("instances.insert", "quotaExceeded", quota="INSTANCES", limit=10)
    with pytest.raises(gexc.Forbidden) as caught:
        insert(c, fake_gce, instance("pf-qs"))
    assert caught.value.errors[0]["reason"] == "quotaExceeded"
    assert "Quota 'INSTANCES' exceeded.  Limit: 10.0 in region us-central1." in str(caught.value)


def test_a_delayed_answer_trips_a_shorter_client_timeout(fake_gce: FakeGce) -> None:
    c = clients(fake_gce)
    fake_gce.inject("instances.list", "delay", seconds=1.0)
    with pytest.raises(requests.exceptions.ReadTimeout):
        c.instances.list(project=fake_gce.project, zone=ZONE, timeout=0.3, retry=None)
    assert list(c.instances.list(project=fake_gce.project, zone=ZONE)) == []


def test_request_ids_dedupe_deletes_and_firewall_calls_too(fake_gce: FakeGce) -> None:
    c = clients(fake_gce)
    p = fake_gce.project
    wait_done(c, fake_gce, insert(c, fake_gce, instance("pf-dd")))
    delete = compute_v1.DeleteInstanceRequest(
        project=p, zone=ZONE, instance="pf-dd", request_id=str(uuid.uuid4())
    )
    fake_gce.inject("instances.delete", "dropped")
    with pytest.raises(requests.exceptions.ConnectionError):
        c.instances.delete_unary(request=delete)
    first = [o for o in fake_gce.operations() if o["operationType"] == "delete"]
    assert len(first) == 1
    wait_done(c, fake_gce, c.instances.delete_unary(request=delete))
    # Once the instance is gone the same requestId still answers its operation, not 404.
    again = c.instances.delete_unary(request=delete)
    assert again.name == first[0]["name"]
    assert again.status == Status.DONE

    rule = compute_v1.Firewall(
        name="pf-fw", allowed=[compute_v1.Allowed(I_p_protocol="tcp", ports=["3128"])]
    )
    request = compute_v1.InsertFirewallRequest(
        project=p, firewall_resource=rule, request_id=str(uuid.uuid4())
    )
    ops = {c.firewalls.insert_unary(request=request).name for _ in range(3)}
    assert len(ops) == 1
    assert fake_gce.calls["firewalls.insert"] == 3


def test_a_method_the_fake_lacks_is_a_loud_501_not_a_404(fake_gce: FakeGce) -> None:
    c = clients(fake_gce)
    with pytest.raises(gexc.MethodNotImplemented, match="does not implement POST"):
        c.instances.stop_unary(project=fake_gce.project, zone=ZONE, instance="pf-x")
    assert fake_gce.calls["unimplemented"] == 1


def test_a_held_call_is_carried_out_only_once_released(fake_gce: FakeGce) -> None:
    c = clients(fake_gce)
    hold = fake_gce.hold("instances.insert")
    with ThreadPoolExecutor(1) as pool:
        answer = pool.submit(insert, c, fake_gce, instance("pf-held"))
        assert hold.wait_reached()
        assert fake_gce.instances() == []  # arrived, not carried out
        hold.release()
        wait_done(c, fake_gce, answer.result(timeout=10))
    assert [i["name"] for i in fake_gce.instances()] == ["pf-held"]
