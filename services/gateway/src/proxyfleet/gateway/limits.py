"""How many connections one gateway process can hold: each takes two file descriptors
(the client's and the upstream's). The host raises the soft open-file limit to the hard one
at start (`Service.raise_open_files`)."""

from __future__ import annotations

RESERVED_FILES = 64
"""Descriptors kept for everything but connections: Redis, NATS, the metrics server, logs."""


def connection_cap(configured: int, open_files: int) -> int:
    """The connections to serve at once: what was configured, else what the files allow."""
    if configured > 0:
        return configured
    return max(1, (open_files - RESERVED_FILES) // 2)
