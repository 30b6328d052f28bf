"""Secrets the providers file names by path (read here, by the static provisioner only:
every service reads the providers file, only this one needs the vendor's password)."""

from __future__ import annotations

from pathlib import Path

import msgspec

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.provisioner_static.pure.config import StaticProviderConfig


def with_secrets(entry: StaticProviderConfig) -> StaticProviderConfig:
    """The entry with its vendor's `password_file` read into `password` (trailing newline
    dropped); ConfigError naming the file, never its content, when it cannot be read."""
    vendor = entry.static.vendor
    if vendor is None or not vendor.password_file:
        return entry
    where = f"provider {entry.name!r}: vendor.password_file {vendor.password_file}"
    try:
        password = Path(vendor.password_file).read_text().rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: {getattr(exc, 'strerror', None) or exc}") from None
    if not password:
        raise ConfigError(f"{where}: the file is empty")
    vendor = msgspec.structs.replace(vendor, password=password, password_file="")
    static = msgspec.structs.replace(entry.static, vendor=vendor)
    return msgspec.structs.replace(entry, static=static)
