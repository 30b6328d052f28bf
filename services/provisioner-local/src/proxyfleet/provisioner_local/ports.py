"""Choosing a proxy's port: free now, and not reserved by another proxy's marker."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from pathlib import Path

from proxyfleet.provisioner_local.files import read_marker


def reserved_ports(markers: Iterable[Path], except_marker: Path) -> set[int]:
    """Ports held by other proxies' markers (running or about to be started)."""
    ports: set[int] = set()
    for path in markers:
        if path == except_marker:
            continue
        marker = read_marker(path)
        if marker is not None:
            ports.add(marker.port)
    return ports


def pick_port(
    port_range: tuple[int, int],
    reserved: set[int],
    is_free: Callable[[int], bool],
    preferred: int | None = None,
    start: int | None = None,
) -> int | None:
    """`preferred` when it is still usable, else the first usable port from a random
    `start` onwards (wrapping), so freed ports are not handed out again at once."""
    low, high = port_range
    if preferred is not None and preferred not in reserved and is_free(preferred):
        return preferred
    size = high - low + 1
    offset = random.randrange(size) if start is None else (start - low) % size
    for i in range(size):
        port = low + (offset + i) % size
        if port not in reserved and is_free(port):
            return port
    return None
