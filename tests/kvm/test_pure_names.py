from __future__ import annotations

import hashlib
import re

import pytest

from proxyfleet.provisioner_kvm.pure.names import (
    base_volume_name,
    domain_name,
    overlay_volume_name,
    parse_resource_id,
    proxy_id_from_domain_name,
    resource_id,
    seed_volume_name,
)
from proxyfleet.provisioner_kvm.pure.placement import ImageRef

SHA = "ab" * 32
# libvirt volume names become file names in a dir pool: keep them to a safe alphabet.
VOLUME_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]*$")


def _image(key: str = "debian-12", sha256: str = SHA, fmt: str = "qcow2") -> ImageRef:
    return ImageRef(
        key=key,
        url="https://cloud.debian.org/images/debian-12-genericcloud-amd64.qcow2",
        sha256=sha256,
        firmware="uefi",
        format="qcow2" if fmt == "qcow2" else "raw",
    )


def test_per_proxy_names() -> None:
    assert domain_name("p0123abc") == "pf-p0123abc"
    assert overlay_volume_name("p0123abc") == "pf-p0123abc-disk.qcow2"
    assert seed_volume_name("p0123abc") == "pf-p0123abc-seed.iso"


def test_proxy_id_from_domain_name() -> None:
    assert proxy_id_from_domain_name(domain_name("p1")) == "p1"
    assert proxy_id_from_domain_name("pf-") is None
    assert proxy_id_from_domain_name("debian12") is None


def test_base_volume_name_uses_the_configured_checksum() -> None:
    assert base_volume_name(_image()) == f"pf-base-debian-12-{SHA[:12]}.qcow2"
    assert base_volume_name(_image(fmt="raw")).endswith(".raw")


def test_base_volume_name_without_checksum_hashes_the_url() -> None:
    image = _image(key="url", sha256="")
    digest = hashlib.sha256(image.url.encode()).hexdigest()[:12]
    assert base_volume_name(image) == f"pf-base-url-{digest}.qcow2"


def test_base_volume_name_changes_with_the_image() -> None:
    other = "cd" * 32
    assert base_volume_name(_image()) != base_volume_name(_image(sha256=other))


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("Debian_12", "debian-12"),
        ("ubuntu 24.04/lts", "ubuntu-24-04-lts"),
        ("--weird--", "weird"),
        ("日本", "image"),
        ("x" * 100, "x" * 40),
    ],
)
def test_base_volume_name_sanitises_the_key(key: str, expected: str) -> None:
    name = base_volume_name(_image(key=key))
    assert name == f"pf-base-{expected}-{SHA[:12]}.qcow2"
    assert VOLUME_NAME.fullmatch(name)


def test_resource_id_round_trip() -> None:
    rid = resource_id("hv1", "p42")
    assert rid == "hv1/pf-p42"
    assert parse_resource_id(rid) == ("hv1", "pf-p42")


@pytest.mark.parametrize("rid", ["", "hv1", "/pf-p1", "hv1/", "hv1/p1", "hv1/pf-", "a/b/pf-p1"])
def test_parse_resource_id_rejects_malformed(rid: str) -> None:
    with pytest.raises(ValueError, match="resource id"):
        parse_resource_id(rid)
