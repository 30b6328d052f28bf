"""A real HTTPS proxy (CONNECT inside TLS to the proxy): Squid's `https_port` (Debian's
Squid is built with GnuTLS) with basic auth, its certificate for 127.0.0.1 signed by a
throwaway CA made for it."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from dataclasses import dataclass

from tests.loopback_squid.host import find_squid, hand_to_proxy_user, make_root
from tests.upstreams.processes import require_binary, start_listening, stop

from proxyfleet.common.domain.squid import htpasswd_line, loopback_egress_lines
from proxyfleet.common.wire.models import proxy_url
from proxyfleet.devstack.target import make_tls_material

NCSA_AUTH = "/usr/lib/squid/basic_ncsa_auth"
USERNAME, PASSWORD = "tls-user", "tls:pw@1"
"""The fixture's credentials: the password needs percent-encoding in a URL."""


@dataclass(frozen=True, slots=True)
class TlsUpstream:
    host: str
    port: int
    username: str
    password: str
    ca_file: str
    """The PEM CA bundle that signed the proxy's certificate (IP SAN 127.0.0.1): give it
    to clients (`curl --proxy-cacert`, an SSLContext's cafile)."""
    exit_address: str
    """The address its tunnels to loopback leave from: what the `target` echo sees."""

    def url(self, scheme: str = "https") -> str:
        """`https://user:pass@127.0.0.1:PORT`, the credentials percent-encoded."""
        return proxy_url(scheme, self.host, self.port, self.username, self.password)


def squid_conf(directory: str, port: int, exit_address: str) -> str:
    """TLS to the proxy, basic auth, CONNECT to loopback destinations only (any port)."""
    lines = [
        f"https_port 127.0.0.1:{port} tls-cert={directory}/cert.pem tls-key={directory}/key.pem",
        f"pid_filename {directory}/squid.pid",
        f"cache_log {directory}/cache.log",
        f"access_log stdio:{directory}/access.log",
        f"coredump_dir {directory}",
        "cache deny all",
        "pinger_enable off",
        "shutdown_lifetime 1 seconds",
        f"auth_param basic program {NCSA_AUTH} {directory}/passwd",
        "auth_param basic children 2 startup=2",
        "auth_param basic realm proxyfleet-tls-upstream",
        "acl authed proxy_auth REQUIRED",
        "acl loopback_destinations dst 127.0.0.0/8",
        "http_access deny !loopback_destinations",
        "http_access allow authed",
        "http_access deny all",
        *loopback_egress_lines(exit_address),
    ]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def running_tls_upstream(
    username: str = USERNAME,
    password: str = PASSWORD,
    exit_address: str = "127.0.0.6",
) -> Iterator[TlsUpstream]:
    """Squid's https_port on a free 127.0.0.1 port until the block ends (killed by its
    pid). Its folder is outside pytest's tmp tree: Squid runs as user `proxy` and must
    read its key and write its logs there."""
    squid = require_binary(find_squid() or "squid", "squid")
    root = make_root("pf-tls-upstream-")
    try:
        files = make_tls_material(root, reuse=False)
        (root / "passwd").write_text(htpasswd_line(username, password))

        def argv(port: int) -> list[str]:
            (root / "squid.conf").write_text(squid_conf(str(root), port, exit_address))
            hand_to_proxy_user(root)
            return [squid, "-N", "-f", str(root / "squid.conf"), "-n", f"pftls{port}"]

        proc, port = start_listening(argv, root, "127.0.0.1")
        try:
            yield TlsUpstream("127.0.0.1", port, username, password, str(files.ca), exit_address)
        finally:
            stop(proc)
    finally:
        shutil.rmtree(root, ignore_errors=True)
