from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from proxyfleet.provisioner_kvm.pure.volume_xml import (
    base_volume_xml,
    overlay_volume_xml,
    seed_volume_xml,
)

GIB = 2**30


def _parse(text: str) -> ET.Element:
    return ET.fromstring(text)  # noqa: S314 - our own output


def _check(text: str, name: str, capacity: int, fmt: str) -> ET.Element:
    vol = _parse(text)
    assert vol.tag == "volume"
    assert vol.findtext("name") == name
    capacity_el = vol.find("capacity")
    assert capacity_el is not None
    assert (capacity_el.get("unit"), capacity_el.text) == ("bytes", str(capacity))
    target_format = vol.find("target/format")
    assert target_format is not None
    assert target_format.get("type") == fmt
    return vol


@pytest.mark.parametrize("fmt", ["qcow2", "raw"])
def test_base_volume(fmt: str) -> None:
    vol = _check(base_volume_xml("pf-base-x.img", 2 * GIB, fmt), "pf-base-x.img", 2 * GIB, fmt)
    assert vol.find("backingStore") is None


@pytest.mark.parametrize("backing_format", ["qcow2", "raw"])
def test_overlay_volume(backing_format: str) -> None:
    base = "/var/lib/libvirt/images/pf-base-debian-12-0123456789ab.qcow2"
    text = overlay_volume_xml("pf-p1-disk.qcow2", 10 * GIB, base, backing_format)
    vol = _check(text, "pf-p1-disk.qcow2", 10 * GIB, "qcow2")
    assert vol.findtext("backingStore/path") == base
    backing = vol.find("backingStore/format")
    assert backing is not None
    assert backing.get("type") == backing_format


def test_seed_volume() -> None:
    _check(seed_volume_xml("pf-p1-seed.iso", 368640), "pf-p1-seed.iso", 368640, "raw")


def test_names_are_escaped() -> None:
    assert _parse(seed_volume_xml("a&<b>", 1)).findtext("name") == "a&<b>"


@pytest.mark.parametrize(
    ("name", "capacity", "fmt", "message"),
    [
        ("", 1, "raw", "volume name"),
        ("a/b", 1, "raw", "volume name"),
        ("..", 1, "raw", "volume name"),
        ("v", 0, "raw", "capacity"),
        ("v", 1, "vmdk", "format"),
    ],
)
def test_bad_volume_is_refused(name: str, capacity: int, fmt: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        base_volume_xml(name, capacity, fmt)


def test_overlay_needs_an_absolute_backing_path() -> None:
    with pytest.raises(ValueError, match="absolute"):
        overlay_volume_xml("v", 1, "pf-base.qcow2", "qcow2")
    with pytest.raises(ValueError, match="format"):
        overlay_volume_xml("v", 1, "/p/pf-base.qcow2", "vmdk")
