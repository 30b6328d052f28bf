"""File locks (flock): one proxy is created or deleted by one thread of one process at a
time, whatever the number of provisioner replicas on this machine."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing). Safe against the file being
    removed by its holder: a waiter that got the lock on a removed file tries again."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                current = os.stat(path)
            except FileNotFoundError:
                continue
            if current.st_ino != os.fstat(fd).st_ino:
                continue
            yield
            return
        finally:
            os.close(fd)
