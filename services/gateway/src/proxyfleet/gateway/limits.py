"""How many connections one gateway process can hold: each takes two file descriptors
(the client's and the upstream's), and a soft open-file limit of 1,024, the default of many
hosts, would stop it near 500 with accept() failing. At start the soft limit is raised to
the hard one (as Go's runtime and nginx's worker_rlimit_nofile do)."""

from __future__ import annotations

import resource

RESERVED_FILES = 64
"""Descriptors kept for everything but connections: Redis, NATS, the metrics server, logs."""
MOST_FILES = 1 << 20
"""What an unlimited hard limit is taken as."""


def raise_open_files() -> int:
    """Raise the soft open-file limit to the hard one; returns the soft limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = MOST_FILES if hard == resource.RLIM_INFINITY else hard
    if soft == resource.RLIM_INFINITY or soft >= target:
        return MOST_FILES if soft == resource.RLIM_INFINITY else soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):
        return soft
    return target


def connection_cap(configured: int, open_files: int) -> int:
    """The connections to serve at once: what was configured, else what the files allow."""
    if configured > 0:
        return configured
    return max(1, (open_files - RESERVED_FILES) // 2)
