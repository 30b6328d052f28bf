"""The process's open-file limit. A service holding many sockets (the gateway: two a
connection) would stop near 500 connections under a soft limit of 1,024, the default of
many hosts, with accept() failing; a service may ask the host to raise the soft limit to
the hard one at start (as Go's runtime and nginx's worker_rlimit_nofile do)."""

from __future__ import annotations

import contextlib
import resource

MOST_FILES = 1 << 20
"""What an unlimited limit is taken as."""


def open_file_limit() -> int:
    """The soft open-file limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return MOST_FILES if soft == resource.RLIM_INFINITY else soft


def raise_open_files() -> int:
    """Raise the soft open-file limit to the hard one; returns the soft limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = MOST_FILES if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        with contextlib.suppress(ValueError, OSError):  # not allowed: the limit stays
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return open_file_limit()
