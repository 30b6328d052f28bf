"""Files of a proxy folder: atomic writes with exact modes, the marker, the credentials, and
whether the unprivileged user Squid drops to can reach the folder."""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass
from pathlib import Path

import msgspec

from proxyfleet.common.wire.models import ProxySpec
from proxyfleet.provisioner_local.layout import ProxyFolder
from proxyfleet.provisioner_local.marker import (
    Credentials,
    Marker,
    decode_credentials,
    decode_marker,
    encode_marker,
)

SQUID_USER = "proxy"
"""The user Debian's Squid switches to when started as root (cache_effective_user)."""


@dataclass(frozen=True, slots=True)
class Owner:
    """Who must be able to read a proxy's files besides us (None: only us)."""

    uid: int
    gid: int


def squid_owner() -> Owner | None:
    """The user Squid runs as when we are root; None when we are not root (Squid then
    keeps our user) or the user does not exist."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(SQUID_USER)
    except KeyError:
        return None
    return Owner(entry.pw_uid, entry.pw_gid)


def write_file(path: Path, data: bytes, mode: int, group: int | None = None) -> None:
    """Replace `path` atomically with `data`, created with `mode` (and `group`)."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, mode)  # whatever the umask
    if group is not None:
        os.chown(tmp, -1, group)
    os.replace(tmp, path)


def read_marker(path: Path) -> Marker | None:
    try:
        return decode_marker(path.read_bytes())
    except OSError:
        return None


def write_marker(path: Path, marker: Marker) -> None:
    write_file(path, encode_marker(marker), 0o644)


def make_dirs(path: Path, mode: int = 0o755) -> None:
    """mkdir -p, giving the folders it creates `mode` (not the umask's)."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    path.mkdir(parents=True, exist_ok=True)
    for p in missing:
        os.chmod(p, mode)


def prepare_folder(path: Path, owner: Owner | None) -> None:
    """The proxy folder: private to us, or owned by Squid's user so it can write its logs."""
    path.mkdir(mode=0o700, exist_ok=True)
    if owner is None:
        os.chmod(path, 0o700)
    else:
        os.chown(path, owner.uid, owner.gid)
        os.chmod(path, 0o750)  # noqa: S103  (the group is Squid's own user)


def blocked_for(owner: Owner, path: Path) -> Path | None:
    """The first folder on the way to `path` that `owner` cannot traverse (None: all can)."""
    for folder in reversed([path, *path.parents]):
        try:
            st = folder.stat()
        except FileNotFoundError:
            return None  # we create the rest, traversable
        if st.st_uid == owner.uid:
            allowed = st.st_mode & 0o100
        elif st.st_gid == owner.gid:
            allowed = st.st_mode & 0o010
        else:
            allowed = st.st_mode & 0o001
        if not allowed:
            return folder
    return None


def write_credentials(folder: ProxyFolder, spec: ProxySpec) -> None:
    """proxy.json: what registering the proxy again from its folder needs (0600)."""
    creds = Credentials(
        username=spec.username,
        password=spec.password,
        labels=dict(spec.labels),
        placement=dict(spec.placement),
    )
    write_file(folder.credentials, msgspec.json.encode(creds), 0o600)


def read_credentials(path: Path) -> Credentials | None:
    try:
        return decode_credentials(path.read_bytes())
    except OSError:
        return None
