"""The fake GCE boots what it is given: insert → operation PENDING/RUNNING/DONE → RUNNING
with a natIP → a real CONNECT through the Squid the user-data describes → delete → gone.
Driven with the real google-cloud-compute clients over REST."""

from __future__ import annotations

import os
import ssl
import time
import uuid

import httpx
import pytest
from google.api_core import exceptions as gexc
from google.cloud import compute_v1
from tests.gcp.conftest import Target
from tests.gcp.fake_gce import FakeGce
from tests.gcp.gce_helpers import (
    PASSWORD,
    PORT,
    USER,
    ZONE,
    clients,
    connect_status,
    insert,
    instance,
    user_data,
    wait_done,
)

Status = compute_v1.Operation.Status


def test_insert_boots_a_squid_that_proxies_with_the_user_data_credentials(
    fake_gce: FakeGce, target: Target
) -> None:
    if not fake_gce.squid_available:
        pytest.skip("squid is not installed")
    fake_gce.settings.pending_s = 0.3
    fake_gce.settings.running_s = 0.3
    c = clients(fake_gce)
    body = instance(
        "pf-p1", labels={"proxyfleet-proxy": "p1"}, user_data_text=user_data([target.port])
    )

    op = insert(c, fake_gce, body)
    assert op.status == Status.PENDING
    assert op.operation_type == "insert"
    assert op.target_link.endswith(f"/projects/{fake_gce.project}/zones/{ZONE}/instances/pf-p1")
    seen = {op.status}
    for _ in range(500):  # 10 s at most
        op = c.zone_ops.get(project=fake_gce.project, zone=ZONE, operation=op.name)
        seen.add(op.status)
        if op.status == Status.DONE:
            break
        time.sleep(0.02)
    assert seen == {Status.PENDING, Status.RUNNING, Status.DONE}
    assert not op.error.errors

    got = c.instances.get(project=fake_gce.project, zone=ZONE, instance="pf-p1")
    assert got.status == "RUNNING"
    nat_ip = got.network_interfaces[0].access_configs[0].nat_i_p
    assert nat_ip.startswith("127.")
    assert got.labels == {"proxyfleet-proxy": "p1"}
    assert got.disks[0].boot
    assert got.disks[0].auto_delete
    [listed] = fake_gce.instances()
    assert listed["natIP"] == nat_ip
    assert listed["boot_error"] is None

    assert connect_status(nat_ip, PORT, target.port, (USER, PASSWORD)) == 200
    assert connect_status(nat_ip, PORT, target.port, None) == 407
    assert connect_status(nat_ip, PORT, target.port, (USER, "wrong")) == 407
    proxy = f"http://{USER}:{PASSWORD}@{nat_ip}:{PORT}"
    tls = ssl.create_default_context(cafile=target.ca_file)
    with httpx.Client(proxy=proxy, verify=tls, timeout=10) as http:
        assert http.get(target.url).status_code == 200

    [disk] = fake_gce.disks()
    assert disk["name"] == "pf-p1"
    assert disk["users"] == [got.self_link]
    pid = fake_gce.squids()[f"{ZONE}-pf-p1"]

    delete = c.instances.delete_unary(
        request=compute_v1.DeleteInstanceRequest(
            project=fake_gce.project, zone=ZONE, instance="pf-p1", request_id=str(uuid.uuid4())
        )
    )
    assert wait_done(c, fake_gce, delete).error.errors == []
    with pytest.raises(gexc.NotFound):
        c.instances.get(project=fake_gce.project, zone=ZONE, instance="pf-p1")
    assert fake_gce.leftovers() == {}
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert fake_gce.calls["instances.insert"] == 1
    assert fake_gce.calls["instances.delete"] == 1


def test_a_repeated_request_id_returns_the_same_operation_and_makes_nothing_new(
    fake_gce: FakeGce,
) -> None:
    c = clients(fake_gce)
    request_id = str(uuid.uuid4())
    first = insert(c, fake_gce, instance("pf-dup"), request_id)
    again = insert(c, fake_gce, instance("pf-dup"), request_id)
    assert again.name == first.name
    assert len(fake_gce.instances()) == 1
    assert fake_gce.calls["instances.insert"] == 2
    # A new requestId for the same name is a second insert: Google refuses it.
    with pytest.raises(gexc.Conflict, match="already exists"):
        insert(c, fake_gce, instance("pf-dup"))


def test_every_squid_is_stopped_when_the_fake_closes(target: Target) -> None:
    fake = FakeGce(project="pf-other", zones=["europe-west4-a"]).start()
    try:
        if not fake.squid_available:
            pytest.skip("squid is not installed")
        c = clients(fake)
        zone = "europe-west4-a"
        for name in ("pf-a", "pf-b"):
            body = instance(name, zone=zone, user_data_text=user_data([target.port], name))
            wait_done(c, fake, insert(c, fake, body, zone=zone), zone)
        pids = set(fake.squids().values())
        addresses = {i["natIP"] for i in fake.instances()}
        assert len(pids) == 2
        assert len(addresses) == 2
    finally:
        fake.close()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_with_a_guest_boot_time_the_vm_runs_before_its_squid_listens(
    fake_gce: FakeGce, target: Target
) -> None:
    if not fake_gce.squid_available:
        pytest.skip("squid is not installed")
    fake_gce.settings.guest_boot_s = 1.0
    c = clients(fake_gce)
    body = instance("pf-late", user_data_text=user_data([target.port], "pf-late"))
    started = time.monotonic()
    wait_done(c, fake_gce, insert(c, fake_gce, body))
    got = c.instances.get(project=fake_gce.project, zone=ZONE, instance="pf-late")
    assert got.status == "RUNNING"
    nat_ip = got.network_interfaces[0].access_configs[0].nat_i_p
    assert time.monotonic() - started < 1.0
    with pytest.raises(ConnectionRefusedError):
        connect_status(nat_ip, PORT, target.port, (USER, PASSWORD))
    for _ in range(100):  # 10 s at most
        if fake_gce.squids():
            break
        time.sleep(0.1)
    for _ in range(50):
        try:
            assert connect_status(nat_ip, PORT, target.port, (USER, PASSWORD)) == 200
            break
        except ConnectionRefusedError:
            time.sleep(0.1)
    else:
        raise AssertionError("squid never listened")


def test_a_vm_deleted_while_booting_leaves_no_squid_and_its_name_can_be_reused(
    fake_gce: FakeGce, target: Target
) -> None:
    if not fake_gce.squid_available:
        pytest.skip("squid is not installed")
    c = clients(fake_gce)
    p = fake_gce.project
    ud = user_data([target.port], "pf-re")
    insert(c, fake_gce, instance("pf-re", user_data_text=ud))  # still PENDING
    wait_done(c, fake_gce, c.instances.delete_unary(project=p, zone=ZONE, instance="pf-re"))
    for _ in range(50):  # the insert's boot may still be finishing: 5 s at most
        if not fake_gce.squids() and not fake_gce.instances():
            break
        time.sleep(0.1)
    assert fake_gce.leftovers() == {}

    wait_done(c, fake_gce, insert(c, fake_gce, instance("pf-re", user_data_text=ud)))
    [vm] = fake_gce.instances()
    assert vm["status"] == "RUNNING"
    assert connect_status(vm["natIP"], PORT, target.port, (USER, PASSWORD)) == 200
