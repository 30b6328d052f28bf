"""Firewalls, disks, addresses, images, listing with label filters and paging, Google's
error bodies, and preemption, through the real clients."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from google.api_core import exceptions as gexc
from google.cloud import compute_v1
from tests.gcp.fake_gce import FakeGce
from tests.gcp.gce_helpers import ZONE, Clients, clients, insert, instance, wait_done

Status = compute_v1.Operation.Status


def _global_done(c: Clients, fake: FakeGce, op: compute_v1.Operation) -> compute_v1.Operation:
    for _ in range(20):
        op = c.global_ops.wait(project=fake.project, operation=op.name)
        if op.status == Status.DONE:
            return op
    raise AssertionError("global operation not DONE")


def _rule(ports: list[str], ranges: list[str]) -> compute_v1.Firewall:
    return compute_v1.Firewall(
        name="pf-allow-proxy",
        network="global/networks/default",
        target_tags=["proxyfleet"],
        source_ranges=ranges,
        allowed=[compute_v1.Allowed(I_p_protocol="tcp", ports=ports)],
        description="proxyfleet installation i1",
    )


def test_firewall_insert_get_patch_list_delete(fake_gce: FakeGce) -> None:
    c = clients(fake_gce)
    p = fake_gce.project
    op = c.firewalls.insert_unary(
        request=compute_v1.InsertFirewallRequest(
            project=p,
            firewall_resource=_rule(["3128"], ["198.51.100.0/24"]),
            request_id=str(uuid.uuid4()),
        )
    )
    assert op.self_link.endswith(f"/projects/{p}/global/operations/{op.name}")
    assert not op.zone
    assert not _global_done(c, fake_gce, op).error.errors
    got = c.firewalls.get(project=p, firewall="pf-allow-proxy")
    assert got.allowed[0].I_p_protocol == "tcp"
    assert list(got.allowed[0].ports) == ["3128"]
    assert list(got.source_ranges) == ["198.51.100.0/24"]
    assert got.direction == "INGRESS"
    assert got.priority == 1000
    assert got.network.endswith(f"/projects/{p}/global/networks/default")

    with pytest.raises(gexc.Conflict):
        c.firewalls.insert_unary(project=p, firewall_resource=_rule(["3128"], ["0.0.0.0/0"]))
    patch = compute_v1.Firewall(source_ranges=["203.0.113.0/24", "198.51.100.0/24"])
    op = c.firewalls.patch_unary(project=p, firewall="pf-allow-proxy", firewall_resource=patch)
    assert not _global_done(c, fake_gce, op).error.errors
    [fw] = fake_gce.firewalls()
    assert fw["sourceRanges"] == ["203.0.113.0/24", "198.51.100.0/24"]
    assert fw["targetTags"] == ["proxyfleet"]  # a patch keeps what it does not name
    names = [
        f.name
        for f in c.firewalls.list(request={"project": p, "filter": 'name = "pf-allow-proxy"'})
    ]
    assert names == ["pf-allow-proxy"]

    with pytest.raises(gexc.BadRequest, match="sourceRanges"):
        c.firewalls.insert_unary(
            project=p,
            firewall_resource=compute_v1.Firewall(
                name="pf-bad",
                source_ranges=["not-a-cidr"],
                allowed=[compute_v1.Allowed(I_p_protocol="tcp", ports=["1"])],
            ),
        )
    _global_done(c, fake_gce, c.firewalls.delete_unary(project=p, firewall="pf-allow-proxy"))
    assert fake_gce.firewalls() == []
    with pytest.raises(gexc.NotFound):
        c.firewalls.get(project=p, firewall="pf-allow-proxy")
    assert fake_gce.calls["firewalls.patch"] == 1
    assert fake_gce.calls["globalOperations.wait"] >= 3


def test_boot_disks_follow_their_instance_and_leftovers_can_be_deleted(
    fake_gce: FakeGce,
) -> None:
    c = clients(fake_gce)
    p = fake_gce.project
    body = instance("pf-disk")
    body.disks[0].auto_delete = False  # what a leak looks like: the disk outlives the VM
    body.disks[0].initialize_params.labels = {"proxyfleet-installation": "i1"}
    wait_done(c, fake_gce, insert(c, fake_gce, body))
    [disk] = c.disks.list(project=p, zone=ZONE)
    assert disk.name == "pf-disk"
    assert disk.size_gb == 10
    assert disk.source_image.endswith(
        "/projects/debian-cloud/global/images/debian-12-bookworm-v20261110"
    )
    with pytest.raises(gexc.BadRequest, match="already being used"):
        c.disks.delete_unary(project=p, zone=ZONE, disk="pf-disk")
    wait_done(c, fake_gce, c.instances.delete_unary(project=p, zone=ZONE, instance="pf-disk"))
    scopes = dict(
        c.disks.aggregated_list(
            request={"project": p, "filter": 'labels.proxyfleet-installation = "i1"'}
        )
    )
    [leftover] = scopes[f"zones/{ZONE}"].disks
    assert list(leftover.users) == []
    wait_done(c, fake_gce, c.disks.delete_unary(project=p, zone=ZONE, disk="pf-disk"))
    assert fake_gce.disks() == []


def test_addresses_list_and_delete(fake_gce: FakeGce) -> None:
    c = clients(fake_gce)
    p = fake_gce.project
    fake_gce.add_address("us-central1", "pf-leak", {"proxyfleet-installation": "i1"})
    fake_gce.add_address("us-central1", "someone-else")
    scopes = dict(
        c.addresses.aggregated_list(
            request={"project": p, "filter": 'labels.proxyfleet-installation = "i1"'}
        )
    )
    assert [a.name for a in scopes["regions/us-central1"].addresses] == ["pf-leak"]
    assert scopes["regions/europe-west1"].warning.code == "NO_RESULTS_ON_PAGE"
    op = c.addresses.delete_unary(project=p, region="us-central1", address="pf-leak")
    for _ in range(20):
        op = c.region_ops.wait(project=p, region="us-central1", operation=op.name)
        if op.status == Status.DONE:
            break
    assert [a.name for a in c.addresses.list(project=p, region="us-central1")] == ["someone-else"]


def test_images_by_name_and_family_and_a_missing_image(fake_gce: FakeGce) -> None:
    c = clients(fake_gce)
    fake_gce.add_image("debian-cloud", "debian-12-bookworm-v20261201", "debian-12")
    newest = c.images.get_from_family(project="debian-cloud", family="debian-12")
    assert newest.name == "debian-12-bookworm-v20261201"
    assert c.images.get(project="debian-cloud", image=newest.name).family == "debian-12"
    with pytest.raises(gexc.NotFound, match="family/nope"):
        c.images.get_from_family(project="debian-cloud", family="nope")
    with pytest.raises(gexc.NotFound, match="images/family/nope"):
        insert(
            c, fake_gce, instance("pf-img", image="projects/debian-cloud/global/images/family/nope")
        )
    assert fake_gce.instances() == []


def test_aggregated_list_with_label_filters_and_pages(fake_gce: FakeGce) -> None:
    c = clients(fake_gce)
    p = fake_gce.project
    for n in range(5):
        labels = {"proxyfleet-installation": "i1" if n < 4 else "i2", "proxyfleet-proxy": f"p{n}"}
        zone = fake_gce.zones[n % 2]
        insert(c, fake_gce, instance(f"pf-{n}", zone=zone, labels=labels), zone=zone)

    def names(flt: str, max_results: int = 500) -> list[str]:
        request = {"project": p, "filter": flt, "max_results": max_results}
        return sorted(
            i.name
            for _, scoped in c.instances.aggregated_list(request=request)
            for i in scoped.instances
        )

    assert names('labels.proxyfleet-installation = "i1"') == ["pf-0", "pf-1", "pf-2", "pf-3"]
    assert names('labels.proxyfleet-installation = "i1"', max_results=1) == [
        "pf-0",
        "pf-1",
        "pf-2",
        "pf-3",
    ]
    both = '(labels.proxyfleet-installation = "i1") AND (labels.proxyfleet-proxy = "p2")'
    assert names(both) == ["pf-2"]
    assert names('labels.proxyfleet-installation = "i2" OR labels.proxyfleet-proxy = "p0"') == [
        "pf-0",
        "pf-4",
    ]
    assert names("labels.proxyfleet-proxy:*") == [f"pf-{n}" for n in range(5)]
    assert names('labels.proxyfleet-installation != "i1"') == ["pf-4"]
    assert fake_gce.calls["instances.aggregatedList"] >= 7  # the one-per-page listing paged
    with pytest.raises(gexc.BadRequest, match="Invalid list filter expression"):
        names("labels.x = ")
    zone_names = [i.name for i in c.instances.list(project=p, zone=fake_gce.zones[1])]
    assert zone_names == ["pf-1", "pf-3"]


def test_google_error_bodies(fake_gce: FakeGce) -> None:
    c = clients(fake_gce)
    p = fake_gce.project
    with pytest.raises(gexc.NotFound) as caught:
        c.instances.get(project=p, zone=ZONE, instance="nope")
    error = caught.value.response.json()["error"]
    assert error["code"] == 404
    assert error["status"] == "NOT_FOUND"
    assert error["errors"] == [
        {
            "message": f"The resource 'projects/{p}/zones/{ZONE}/instances/nope' was not found",
            "domain": "global",
            "reason": "notFound",
        }
    ]
    with pytest.raises(gexc.BadRequest, match=r"resource\.name"):
        insert(c, fake_gce, instance("Not_A_Name"))
    with pytest.raises(gexc.BadRequest, match="requestId"):
        insert(c, fake_gce, instance("pf-x"), request_id="00000000-0000-0000-0000-000000000000")
    with pytest.raises(gexc.BadRequest, match=r"resource\.labels"):
        insert(c, fake_gce, instance("pf-x", labels={"Upper": "x"}))
    with pytest.raises(gexc.NotFound):
        c.zone_ops.get(project=p, zone=ZONE, operation="operation-nope")


def test_preempting_a_spot_vm_deletes_it_and_stops_its_squid(fake_gce: FakeGce) -> None:
    c = clients(fake_gce)
    wait_done(c, fake_gce, insert(c, fake_gce, instance("pf-spot", spot=True)))
    [vm] = fake_gce.instances()
    assert vm["scheduling"]["provisioningModel"] == "SPOT"
    assert vm["scheduling"]["instanceTerminationAction"] == "DELETE"
    fake_gce.preempt("pf-spot")
    assert fake_gce.instances() == []
    assert fake_gce.squids() == {}
    preempted = [
        o
        for o in c.zone_ops.list(project=fake_gce.project, zone=ZONE)
        if o.operation_type == "compute.instances.preempted"
    ]
    assert len(preempted) == 1
    assert preempted[0].target_link.endswith("/instances/pf-spot")
    wait_done(c, fake_gce, insert(c, fake_gce, instance("pf-std")))
    with pytest.raises(ValueError, match="not a spot"):
        fake_gce.preempt("pf-std")


def test_preempting_a_stop_action_spot_vm_leaves_it_terminated(fake_gce: FakeGce) -> None:
    c = clients(fake_gce)
    body = instance("pf-stop", spot=True)
    body.scheduling.instance_termination_action = "STOP"
    wait_done(c, fake_gce, insert(c, fake_gce, body))
    fake_gce.preempt("pf-stop")
    got = c.instances.get(project=fake_gce.project, zone=ZONE, instance="pf-stop")
    assert got.status == "TERMINATED"
    assert not got.network_interfaces[0].access_configs[0].nat_i_p


def test_a_fake_of_other_zones_knows_only_those(fake_gce_factory: Callable[..., FakeGce]) -> None:
    fake = fake_gce_factory(project="pf-eu", zones=["europe-west4-a", "europe-west4-b"])
    c = clients(fake)
    scopes = [scope for scope, _ in c.instances.aggregated_list(request={"project": "pf-eu"})]
    assert sorted(scopes) == ["zones/europe-west4-a", "zones/europe-west4-b"]
    with pytest.raises(gexc.BadRequest, match="Unknown zone"):
        insert(c, fake, instance("pf-x"))  # us-central1-a
    with pytest.raises(gexc.NotFound, match="projects/pf-fake-project"):
        c.instances.list(project="pf-fake-project", zone="europe-west4-a")
