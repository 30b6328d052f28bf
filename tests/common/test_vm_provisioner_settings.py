"""The KVM and GCP provisioners' runner settings: the runner's 5 s ack-wait (heartbeats hold
a slow create), and a stale-after raised past the waits of one create plus that ack-wait, so
the reconciler does not republish an intent a live create or its redelivery still holds."""

from __future__ import annotations

from proxyfleet.common.providers import parse_providers_config
from proxyfleet.common.runner import RunnerSettings
from proxyfleet.provisioner_gcp import main as gcp_main
from proxyfleet.provisioner_gcp.adapter import ADDRESS_WAIT
from proxyfleet.provisioner_gcp.pure.config import GcpProviderConfig
from proxyfleet.provisioner_gcp.settings import GcpProvisionerSettings
from proxyfleet.provisioner_kvm import main as kvm_main
from proxyfleet.provisioner_kvm.pure.config import KvmProviderConfig
from proxyfleet.provisioner_kvm.settings import KvmProvisionerSettings
from proxyfleet.provisioner_kvm.shared import UPLOAD_WAIT

CONFIG = """
providers:
  - name: cloud
    type: gcp
    zones: [eu-1]
    gcp:
      project: my-project-123
      zones: {eu-1: europe-west1-b}
      source_ranges: [203.0.113.0/24]
      operation_timeout: 200
  - name: onprem
    type: kvm
    zones: [rack-a]
    kvm:
      hosts:
        - name: hv1
          zone: rack-a
          ssh_address: 127.0.0.1
          ssh_key_file: /secrets/kvm/id_ed25519
          host_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB
      images:
        debian-12: {url: "file:///srv/images/debian-12.qcow2"}
      default_image: debian-12
      address_timeout: 400
"""


def test_both_keep_the_runners_ack_wait() -> None:
    runner = RunnerSettings(provider="p").ack_wait
    assert GcpProvisionerSettings(provider="cloud").ack_wait == runner == 5.0
    assert KvmProvisionerSettings(provider="onprem").ack_wait == runner


def test_stale_after_covers_a_whole_create_and_a_redelivery() -> None:
    cfg = parse_providers_config(CONFIG, "providers.yaml")
    cloud, onprem = cfg.get("cloud", GcpProviderConfig), cfg.get("onprem", KvmProviderConfig)
    gcp = gcp_main.adjust(cloud, GcpProvisionerSettings(provider="cloud"))
    assert gcp.stale_after == 200 + ADDRESS_WAIT + 5
    kvm = kvm_main.adjust(onprem, KvmProvisionerSettings(provider="onprem"))
    assert kvm.stale_after == UPLOAD_WAIT + 400 + 5  # another replica's upload, the guest
    longer = KvmProvisionerSettings(provider="onprem", stale_after=900)
    assert kvm_main.adjust(onprem, longer).stale_after == 900  # never lowered
