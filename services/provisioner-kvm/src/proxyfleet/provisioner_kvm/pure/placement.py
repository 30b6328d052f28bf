"""KVM placement: which base image a proxy boots, a key of the configured images or a URL in
its placement. Pure; shared by the API (through the provider type's placement validator:
a bad placement is a 400 at create) and the KVM provisioner (which resolves it again: config can
change between the two).

Placement comes from API users, so every value is checked here and a bad one is a
permanent error (retrying the same intent cannot fix it) whose message names the key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from proxyfleet.common.core.errors import InvalidInput, PermanentProviderError
from proxyfleet.common.providers import INVALID_PLACEMENT, ProviderConfig
from proxyfleet.provisioner_kvm.pure.config import KvmImage, KvmProviderConfig

Firmware = Literal["uefi", "bios"]
DiskFormat = Literal["qcow2", "raw"]

URL_IMAGE_KEY = "url"
"""The image key of a proxy whose placement gives `image_url` instead of an image key."""

PLACEMENT_KEYS = frozenset({"image", "image_url", "image_sha256", "image_firmware", "image_format"})
"""Placement keys the KVM provider understands; any other key is refused."""

_URL_ONLY_KEYS = ("image_sha256", "image_firmware", "image_format")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_FIRMWARES: tuple[Firmware, ...] = ("uefi", "bios")
_FORMATS: tuple[DiskFormat, ...] = ("qcow2", "raw")
_SCHEMES = ("http", "https", "file")


@dataclass(frozen=True, slots=True)
class ImageRef:
    """A resolved base image: where to fetch it, how to check it and how it boots."""

    key: str
    """Key in the images config, or "url" for a URL given in the placement."""
    url: str
    sha256: str
    """Expected SHA-256 (64 lowercase hex digits), or "" when no check is configured."""
    firmware: Firmware
    format: DiskFormat


def resolve_image(
    placement: Mapping[str, str], images: Mapping[str, KvmImage], default_image: str
) -> ImageRef:
    """The image a proxy boots, from its placement (`image` or `image_url`) or the default.

    Raises PermanentProviderError for an unknown placement key, both `image` and
    `image_url`, an unknown image key, or a bad URL, checksum, firmware or format.
    """
    if unknown := sorted(set(placement) - PLACEMENT_KEYS):
        raise PermanentProviderError(
            f"placement: unknown key(s) {', '.join(unknown)}; "
            f"the kvm provider understands {', '.join(sorted(PLACEMENT_KEYS))}"
        )
    if "image_url" in placement:
        if "image" in placement:
            raise PermanentProviderError(
                "placement: give either image (a configured image key) or image_url, not both"
            )
        return _from_url(placement)
    if extra := [k for k in _URL_ONLY_KEYS if k in placement]:
        raise PermanentProviderError(f"placement.{extra[0]}: only applies together with image_url")
    key = placement.get("image", default_image)
    where = "placement.image" if "image" in placement else "default_image"
    image = images.get(key)
    if image is None:
        known = ", ".join(sorted(images)) or "(none configured)"
        raise PermanentProviderError(f"{where}: unknown image {key!r}; expected one of {known}")
    _check_url(image.url, f"images.{key}.url")
    return ImageRef(
        key=key, url=image.url, sha256=image.sha256, firmware=image.firmware, format=image.format
    )


class KvmPlacementValidator:
    """The KVM provider's placement check for the API (its provider type's validator)."""

    def validate(self, provider: ProviderConfig, placement: Mapping[str, str]) -> None:
        if not isinstance(provider, KvmProviderConfig):
            raise InvalidInput(
                f"provider {provider.name!r} is not of type kvm", code=INVALID_PLACEMENT
            )
        try:
            resolve_image(placement, provider.kvm.images, provider.kvm.default_image)
        except PermanentProviderError as exc:
            raise InvalidInput(str(exc), code=INVALID_PLACEMENT) from None


def _from_url(placement: Mapping[str, str]) -> ImageRef:
    url = placement["image_url"]
    _check_url(url, "placement.image_url")
    # An empty checksum means "no check", as in the images config.
    sha256 = placement.get("image_sha256", "")
    if sha256 and not _SHA256.fullmatch(sha256):
        raise PermanentProviderError(
            "placement.image_sha256: expected 64 lowercase hexadecimal digits"
        )
    firmware = placement.get("image_firmware", "uefi")
    if firmware not in _FIRMWARES:
        raise PermanentProviderError(
            f"placement.image_firmware: expected uefi or bios, got {firmware!r}"
        )
    fmt = placement.get("image_format", "qcow2")
    if fmt not in _FORMATS:
        raise PermanentProviderError(f"placement.image_format: expected qcow2 or raw, got {fmt!r}")
    return ImageRef(
        key=URL_IMAGE_KEY,
        url=url,
        sha256=sha256,
        firmware=firmware,
        format=fmt,
    )


def _check_url(url: str, where: str) -> None:
    expected = "expected an http://, https:// or file:// URL"
    if not url or not url.isprintable() or any(c.isspace() for c in url):
        raise PermanentProviderError(f"{where}: {expected} without spaces or control characters")
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise PermanentProviderError(f"{where}: {expected}: {exc}") from None
    if parts.scheme not in _SCHEMES:
        raise PermanentProviderError(f"{where}: {expected}, got scheme {parts.scheme!r}")
    if parts.scheme == "file":
        if not parts.path.startswith("/"):
            raise PermanentProviderError(f"{where}: {expected}; a file URL needs an absolute path")
    elif not parts.hostname:
        raise PermanentProviderError(f"{where}: {expected}; the URL has no host")
