"""The name of this process among a service's replicas (it reads the hostname: not pure,
unlike `ids`)."""

from __future__ import annotations

import os
import secrets
import socket


def replica_name(service: str) -> str:
    """Unique per process, so a restarted replica inherits nothing of a dead one's (a
    durable consumer's pending messages, a lock's token), and naming the host or pod in
    logs: `<service>-<hostname>-<pid>-<random>`."""
    return f"{service}-{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
