"""A pod's folder on the fake node: its volumes as files and its Squid config rewritten to
them (I/O: files)."""

from __future__ import annotations

from pathlib import Path

from tests.loopback_squid.conf import SquidConfError, rewrite_squid_conf
from tests.loopback_squid.host import hand_to_proxy_user

from proxyfleet.common.domain.squid import loopback_egress_lines

from .pod_files import PodFiles


def write_volumes(directory: Path, files: PodFiles) -> dict[str, str]:
    """Volume name → its folder under `directory` (with its files written)."""
    folders: dict[str, str] = {}
    for volume, entries in files.volumes.items():
        folder = directory / "volumes" / volume
        folder.mkdir(parents=True, mode=0o755)
        folders[volume] = str(folder)
        for f in entries:
            target = folder / f.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(f.content)
            target.chmod(f.mode)
    return folders


def read_conf(conf_path: str, local: str | None) -> str:
    """The container's config file as mounted here."""
    if local is None or not Path(local).is_file():
        raise SquidConfError(f"{conf_path}: no such file in the container's mounts")
    return Path(local).read_text()


def write_conf(
    directory: Path, conf: str, mounted: dict[str, str], address: str, egress: str = ""
) -> tuple[Path, int]:
    """squid.conf for this machine in `directory` (the folder then handed to Squid's
    user), and the port it listens on; with `egress`, its connections to 127/8 leave
    from that address (its node's)."""
    text, port = rewrite_squid_conf(conf, mounted, str(directory), address)
    if egress:
        text += "\n".join(["# The fake node's address.", *loopback_egress_lines(egress), ""])
    path = directory / "squid.conf"
    path.write_text(text)
    hand_to_proxy_user(directory, recursive=True)
    return path, port
