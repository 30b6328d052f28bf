from __future__ import annotations

import pytest

from proxyfleet.common.core.errors import PermanentProviderError
from proxyfleet.provisioner_kvm.pure.config import KvmImage
from proxyfleet.provisioner_kvm.pure.placement import ImageRef, resolve_image

SHA = "0123456789abcdef" * 4
IMAGES = {
    "debian-12": KvmImage(url="https://example.test/debian.qcow2", sha256=SHA),
    "legacy": KvmImage(url="file:///srv/images/legacy.raw", firmware="bios", format="raw"),
}


def test_default_image() -> None:
    assert resolve_image({}, IMAGES, "debian-12") == ImageRef(
        key="debian-12",
        url="https://example.test/debian.qcow2",
        sha256=SHA,
        firmware="uefi",
        format="qcow2",
    )


def test_named_image() -> None:
    ref = resolve_image({"image": "legacy"}, IMAGES, "debian-12")
    assert ref == ImageRef(
        key="legacy",
        url="file:///srv/images/legacy.raw",
        sha256="",
        firmware="bios",
        format="raw",
    )


def test_image_url_with_defaults() -> None:
    ref = resolve_image({"image_url": "http://mirror.test/x.qcow2"}, IMAGES, "debian-12")
    assert ref == ImageRef(
        key="url", url="http://mirror.test/x.qcow2", sha256="", firmware="uefi", format="qcow2"
    )


def test_image_url_with_every_option() -> None:
    placement = {
        "image_url": "https://mirror.test/x.img",
        "image_sha256": SHA,
        "image_firmware": "bios",
        "image_format": "raw",
    }
    ref = resolve_image(placement, IMAGES, "debian-12")
    assert ref == ImageRef(
        key="url", url="https://mirror.test/x.img", sha256=SHA, firmware="bios", format="raw"
    )


def test_empty_sha256_means_no_check() -> None:
    placement = {"image_url": "https://mirror.test/x.img", "image_sha256": ""}
    assert resolve_image(placement, IMAGES, "debian-12").sha256 == ""


@pytest.mark.parametrize(
    ("placement", "message"),
    [
        ({"flavor": "big"}, r"unknown key\(s\) flavor"),
        ({"image": "debian-12", "image_url": "https://x.test/a"}, "not both"),
        ({"image": "nope"}, r"placement.image: unknown image 'nope'; expected one of debian-12"),
        ({"image": "legacy", "image_sha256": SHA}, "image_sha256: only applies"),
        ({"image_firmware": "bios"}, "image_firmware: only applies"),
        ({"image_url": "https://x.test/a", "image_sha256": "ABC"}, "64 lowercase hex"),
        ({"image_url": "https://x.test/a", "image_sha256": SHA.upper()}, "64 lowercase hex"),
        ({"image_url": "https://x.test/a", "image_sha256": SHA + "0"}, "64 lowercase hex"),
        ({"image_url": "https://x.test/a", "image_firmware": "efi"}, "expected uefi or bios"),
        ({"image_url": "https://x.test/a", "image_format": "vmdk"}, "expected qcow2 or raw"),
        ({"image_url": "ftp://x.test/a"}, "scheme 'ftp'"),
        ({"image_url": "/srv/a.qcow2"}, "scheme ''"),
        ({"image_url": "https:///a.qcow2"}, "no host"),
        ({"image_url": "file:relative.qcow2"}, "absolute path"),
        ({"image_url": "https://x.test/a b"}, "without spaces"),
        ({"image_url": ""}, "placement.image_url"),
    ],
)
def test_bad_placement_is_a_permanent_error(placement: dict[str, str], message: str) -> None:
    with pytest.raises(PermanentProviderError, match=message):
        resolve_image(placement, IMAGES, "debian-12")


def test_unknown_default_image() -> None:
    with pytest.raises(PermanentProviderError, match="default_image: unknown image 'gone'"):
        resolve_image({}, IMAGES, "gone")


def test_configured_image_with_a_bad_url() -> None:
    images = {"bad": KvmImage(url="s3://bucket/image.qcow2")}
    with pytest.raises(PermanentProviderError, match=r"images.bad.url: .*scheme 's3'"):
        resolve_image({}, images, "bad")
