"""The `kvm` section of the providers config: hosts by zone, pinned keys, images."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.providers import load_provider, parse_providers_config
from proxyfleet.provisioner_kvm.pure.config import KvmProviderConfig
from proxyfleet.provisioner_local.pure.config import LocalProviderConfig

SHA = "a" * 64
KVM = f"""
providers:
  - name: onprem
    type: kvm
    zones: [rack-a, rack-b]
    boot_timeout: 600
    kvm:
      hosts:
        - name: hv1
          zone: rack-a
          ssh_address: 10.0.0.5
          ssh_key_file: /secrets/kvm/id_ed25519
          host_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB
        - name: hv2
          zone: rack-b
          ssh_address: 10.0.0.6:2222
          ssh_user: proxyfleet
          ssh_key_file: /secrets/kvm/id_ed25519
          host_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIC
          storage_pool: fast
          network: proxies
          domain_type: qemu
          max_proxies: 20
      images:
        debian-12:
          url: https://images.example/debian-12.qcow2
          sha256: {SHA}
        old:
          url: file:///srv/images/old.img
          firmware: bios
          format: raw
      default_image: debian-12
      host_retry_after: 10
"""


def test_kvm_config_parses_with_defaults() -> None:
    cfg = parse_providers_config(KVM, "p.yaml").get("onprem", KvmProviderConfig)
    assert cfg.kvm is not None
    hv1, hv2 = cfg.kvm.hosts
    assert (hv1.ssh_user, hv1.libvirt_socket, hv1.storage_pool, hv1.network) == (
        "root",
        "/var/run/libvirt/libvirt-sock",
        "default",
        "default",
    )
    assert hv1.domain_type == "kvm"
    assert (hv2.ssh_address, hv2.storage_pool, hv2.domain_type) == ("10.0.0.6:2222", "fast", "qemu")
    assert cfg.kvm.images["debian-12"].firmware == "uefi"
    assert cfg.kvm.images["old"].format == "raw"
    assert (cfg.kvm.vcpus, cfg.kvm.memory_mib, cfg.kvm.proxy_port) == (1, 1024, 3128)
    assert (hv1.max_proxies, hv2.max_proxies, cfg.kvm.host_retry_after) == (None, 20, 10.0)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("zone: rack-b\n", "zone: rack-c\n"), "hosts[1].zone: 'rack-c' is not one of"),
        (("zones: [rack-a, rack-b]", "zones: [rack-a, rack-b, rack-z]"), "no host serves zone"),
        (("name: hv2", "name: hv1"), "duplicate host name"),
        (("host_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB", "host_key: nokey"), "host_key"),
        (("default_image: debian-12", "default_image: ubuntu"), "default_image"),
        ((f"sha256: {SHA}", "sha256: ABC"), "kvm.images[...].sha256"),
        (
            ("firmware: bios", "firmware: coreboot"),
            "images[...].firmware: Invalid enum value 'coreboot'",
        ),
        (("domain_type: qemu", "domain_type: xen"), "hosts[1].domain_type"),
        (("max_proxies: 20", "max_proxies: 0"), "hosts[1].max_proxies: Expected `int` >= 1"),
        (("host_retry_after: 10", "host_retry_after: 0"), "kvm.host_retry_after: Expected"),
        (("          ssh_key_file: /secrets/kvm/id_ed25519\n", ""), "ssh_key_file"),
    ],
)
def test_kvm_errors_name_the_key(change: tuple[str, str], expected: str) -> None:
    old, new = change
    assert old in KVM
    with pytest.raises(ConfigError) as err:
        parse_providers_config(KVM.replace(old, new, 1), "providers.yaml")
    assert expected in str(err.value)


def test_kvm_type_needs_its_section() -> None:
    text = "providers:\n  - name: a\n    type: kvm\n    zones: [z]\n"
    with pytest.raises(ConfigError, match=r"providers\[0\]\.kvm: required"):
        parse_providers_config(text, "p.yaml")


def test_load_provider_checks_the_type(tmp_path: Path) -> None:
    path = tmp_path / "providers.yaml"
    path.write_text(KVM)
    assert load_provider(str(path), "onprem", KvmProviderConfig).kvm.default_image == "debian-12"
    with pytest.raises(ConfigError, match="of type 'kvm', not 'local'"):
        load_provider(str(path), "onprem", LocalProviderConfig)
    with pytest.raises(ConfigError, match=r"no provider named 'x' \(found: onprem\)"):
        load_provider(str(path), "x", KvmProviderConfig)
