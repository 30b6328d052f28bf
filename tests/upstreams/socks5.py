"""A real SOCKS5 upstream: Debian's microsocks with username/password auth (RFC 1929) on
a free loopback port, its tunnels leaving from an exit address of its own (`-b`)."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.upstreams.processes import require_binary, start_listening, stop

from proxyfleet.common.wire.models import proxy_url

MICROSOCKS = "/usr/bin/microsocks"
SCHEMES = ("socks5", "socks5h")
USERNAME, PASSWORD = "sock-user", "socks:pw@1"
"""The fixture's credentials: the password needs percent-encoding in a URL."""


@dataclass(frozen=True, slots=True)
class Socks5Upstream:
    host: str
    port: int
    username: str
    password: str
    exit_address: str
    """The address its tunnels leave from: what a target (the `target` echo) sees."""

    def url(self, scheme: str = "socks5") -> str:
        """`socks5://` (the client resolves names) or `socks5h://` (the proxy does), the
        credentials percent-encoded."""
        if scheme not in SCHEMES:
            raise ValueError(f"a SOCKS5 upstream's URL scheme is one of {SCHEMES}, not {scheme!r}")
        return proxy_url(scheme, self.host, self.port, self.username, self.password)


@contextlib.contextmanager
def running_socks5(
    username: str = USERNAME,
    password: str = PASSWORD,
    exit_address: str = "127.0.0.5",
) -> Iterator[Socks5Upstream]:
    """microsocks on a free 127.0.0.1 port until the block ends (killed by its pid)."""
    binary = require_binary(MICROSOCKS, "microsocks")

    def argv(port: int) -> list[str]:
        auth = ["-u", username, "-P", password]
        return [binary, "-i", "127.0.0.1", "-p", str(port), *auth, "-b", exit_address]

    with tempfile.TemporaryDirectory(prefix="pf-socks5-") as directory:
        proc, port = start_listening(argv, Path(directory), "127.0.0.1")
        try:
            yield Socks5Upstream("127.0.0.1", port, username, password, exit_address)
        finally:
            stop(proc)
