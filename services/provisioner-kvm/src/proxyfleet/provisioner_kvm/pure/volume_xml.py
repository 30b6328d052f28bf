"""Storage volume XML for the base image, each VM's overlay disk and its seed ISO."""

from __future__ import annotations

import xml.etree.ElementTree as ET  # only builds XML, never parses
from typing import Literal

_FORMATS = ("qcow2", "raw")


def base_volume_xml(name: str, capacity_bytes: int, fmt: str) -> str:
    """A volume to upload a base image into (`fmt`: the image file's format)."""
    return _volume(name, capacity_bytes, _format(fmt))


def overlay_volume_xml(
    name: str, capacity_bytes: int, backing_path: str, backing_format: str
) -> str:
    """A VM's qcow2 disk whose reads fall through to the shared base image at `backing_path`.

    The backing format is always written: without it qemu refuses (or probes, which is
    unsafe) to open a raw backing file.
    """
    if not backing_path.startswith("/"):
        raise ValueError(f"backing_path {backing_path!r}: expected an absolute path")
    vol = _volume_element(name, capacity_bytes, "qcow2")
    backing = ET.SubElement(vol, "backingStore")
    ET.SubElement(backing, "path").text = backing_path
    ET.SubElement(backing, "format", type=_format(backing_format))
    return _serialize(vol)


def seed_volume_xml(name: str, capacity_bytes: int) -> str:
    """A raw volume to upload a NoCloud seed ISO into."""
    return _volume(name, capacity_bytes, "raw")


def _volume(name: str, capacity_bytes: int, fmt: Literal["qcow2", "raw"]) -> str:
    return _serialize(_volume_element(name, capacity_bytes, fmt))


def _volume_element(name: str, capacity_bytes: int, fmt: str) -> ET.Element:
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"volume name {name!r}: expected a file name without '/'")
    if capacity_bytes < 1:
        raise ValueError(f"capacity_bytes {capacity_bytes}: expected a positive size")
    vol = ET.Element("volume")
    ET.SubElement(vol, "name").text = name
    ET.SubElement(vol, "capacity", unit="bytes").text = str(capacity_bytes)
    # Sparse: blocks are allocated as they are written (or uploaded).
    ET.SubElement(vol, "allocation", unit="bytes").text = "0"
    target = ET.SubElement(vol, "target")
    ET.SubElement(target, "format", type=fmt)
    return vol


def _format(fmt: str) -> Literal["qcow2", "raw"]:
    if fmt == "qcow2":
        return "qcow2"
    if fmt == "raw":
        return "raw"
    raise ValueError(f"format {fmt!r}: expected one of {', '.join(_FORMATS)}")


def _serialize(vol: ET.Element) -> str:
    ET.indent(vol)
    return ET.tostring(vol, encoding="unicode")
