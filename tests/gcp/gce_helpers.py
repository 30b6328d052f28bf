"""Building requests the way an adapter would, for the fake GCE tests: one instance with a
boot disk from an image family, an ephemeral external IP and cloud-init user-data."""

from __future__ import annotations

import base64
import socket
import uuid
from dataclasses import dataclass

from google.cloud import compute_v1
from proxyfleet.provisioner_kvm.pure.cloud_init import CloudInitSpec, render_user_data
from tests.gcp.fake_gce import FakeGce

ZONE = "us-central1-a"
PORT = 3128
USER, PASSWORD = "alice", "gce-s3cret-pw"
IMAGE_FAMILY = "projects/debian-cloud/global/images/family/debian-12"


@dataclass
class Clients:
    instances: compute_v1.InstancesClient
    zone_ops: compute_v1.ZoneOperationsClient
    global_ops: compute_v1.GlobalOperationsClient
    region_ops: compute_v1.RegionOperationsClient
    firewalls: compute_v1.FirewallsClient
    disks: compute_v1.DisksClient
    addresses: compute_v1.AddressesClient
    images: compute_v1.ImagesClient


def clients(fake: FakeGce) -> Clients:
    kw = fake.client_kwargs()
    return Clients(
        compute_v1.InstancesClient(**kw),
        compute_v1.ZoneOperationsClient(**kw),
        compute_v1.GlobalOperationsClient(**kw),
        compute_v1.RegionOperationsClient(**kw),
        compute_v1.FirewallsClient(**kw),
        compute_v1.DisksClient(**kw),
        compute_v1.AddressesClient(**kw),
        compute_v1.ImagesClient(**kw),
    )


def user_data(connect_ports: list[int], name: str = "pf-p1") -> str:
    spec = CloudInitSpec(
        proxy_id=name,
        hostname=name,
        username=USER,
        password=PASSWORD,
        proxy_port=PORT,
        connect_ports=connect_ports,
    )
    return render_user_data(spec)


def instance(
    name: str,
    *,
    zone: str = ZONE,
    labels: dict[str, str] | None = None,
    user_data_text: str | None = None,
    spot: bool = False,
    image: str = IMAGE_FAMILY,
) -> compute_v1.Instance:
    items = [compute_v1.Items(key="user-data", value=user_data_text)] if user_data_text else []
    scheduling = (
        compute_v1.Scheduling(provisioning_model="SPOT", instance_termination_action="DELETE")
        if spot
        else compute_v1.Scheduling()
    )
    return compute_v1.Instance(
        name=name,
        machine_type=f"zones/{zone}/machineTypes/e2-micro",
        labels=labels or {},
        tags=compute_v1.Tags(items=["proxyfleet"]),
        disks=[
            compute_v1.AttachedDisk(
                boot=True,
                auto_delete=True,
                initialize_params=compute_v1.AttachedDiskInitializeParams(
                    source_image=image, disk_size_gb=10
                ),
            )
        ],
        network_interfaces=[
            compute_v1.NetworkInterface(
                network="global/networks/default",
                access_configs=[
                    compute_v1.AccessConfig(name="External NAT", type_="ONE_TO_ONE_NAT")
                ],
            )
        ],
        metadata=compute_v1.Metadata(items=items),
        scheduling=scheduling,
    )


def insert(
    c: Clients,
    fake: FakeGce,
    body: compute_v1.Instance,
    request_id: str | None = None,
    zone: str = ZONE,
) -> compute_v1.Operation:
    request = compute_v1.InsertInstanceRequest(
        project=fake.project,
        zone=zone,
        instance_resource=body,
        request_id=request_id or str(uuid.uuid4()),
    )
    return c.instances.insert_unary(request=request)


def wait_done(
    c: Clients, fake: FakeGce, op: compute_v1.Operation, zone: str = ZONE
) -> compute_v1.Operation:
    """Waits as an adapter should: zoneOperations.wait until DONE (bounded)."""
    for _ in range(20):
        op = c.zone_ops.wait(project=fake.project, zone=zone, operation=op.name)
        if op.status == compute_v1.Operation.Status.DONE:
            return op
    raise AssertionError(f"operation {op.name} not DONE after 20 waits")


def connect_status(address: str, port: int, target_port: int, auth: tuple[str, str] | None) -> int:
    """The status code Squid answers a CONNECT to 127.0.0.1:target_port with."""
    lines = [f"CONNECT 127.0.0.1:{target_port} HTTP/1.1", f"Host: 127.0.0.1:{target_port}"]
    if auth is not None:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        lines.append(f"Proxy-Authorization: Basic {token}")
    with socket.create_connection((address, port), timeout=10) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        status_line = s.makefile("rb").readline().decode()
    return int(status_line.split()[1])
