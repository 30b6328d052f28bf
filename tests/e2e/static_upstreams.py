"""The real upstreams of the static journey, all on loopback, each entry with an exit
address of its own: microsocks instances (socks5, socks5h), one Squid with a listener per
entry (http and https, `myportname` choosing each listener's exit), and the vendor
gateway stand-in (a session per entry). Each entry has its own credentials, so a leak
names the entry; `lines` writes them in the formats people paste."""

from __future__ import annotations

import contextlib
import secrets
import shutil
import socket
from collections.abc import Iterator
from dataclasses import dataclass

from tests.loopback_squid.host import accepts, find_squid, hand_to_proxy_user, make_root
from tests.upstreams.processes import require_binary, start_listening, stop
from tests.upstreams.socks5 import running_socks5
from tests.upstreams.tls_proxy import NCSA_AUTH
from tests.upstreams.vendor_gateway import VendorGateway, running_vendor_gateway

from proxyfleet.common.domain.squid import htpasswd_line
from proxyfleet.common.wire.models import proxy_url
from proxyfleet.devstack.target import make_tls_material

HOST = "127.0.0.1"
SQUID_EXITS = "127.0.23.{}"
SOCKS_EXITS = "127.0.24.{}"
VENDOR_EXIT_BASE = "127.0.25.1"


@dataclass(frozen=True, slots=True)
class Entry:
    """One line of the list and what it should become."""

    line: str
    """As written in the file."""
    scheme: str
    exit: str
    """The address the echo target sees through it ("" for a vendor session: the gateway
    hands exits out in the order sessions first appear)."""
    secrets: tuple[str, ...]
    """What must never reach a log line or a gateway client: its password, for a vendor
    session also its username and session id."""
    session: str = ""


@dataclass(frozen=True, slots=True)
class Listener:
    kind: str
    """http or https."""
    port: int
    exit: str


def _secret(kind: str, n: int) -> str:
    return f"pw-{kind}{n}-{secrets.token_hex(4)}"


def paste(scheme: str, port: int, user: str, password: str, form: str) -> str:
    """A line as people paste it: `url`, `hpup` (host:port:user:pass) or `upat`
    (user:pass@host:port; the last two take the source's scheme, http)."""
    if form == "hpup":
        return f"{HOST}:{port}:{user}:{password}"
    if form == "upat":
        return f"{user}:{password}@{HOST}:{port}"
    return proxy_url(scheme, HOST, port, user, password)


def squid_conf(directory: str, listeners: list[Listener], names: list[str]) -> str:
    """Basic auth, CONNECT to loopback only; listener i (named `names[i]`) leaves from its
    own exit address."""
    tls = f"tls-cert={directory}/cert.pem tls-key={directory}/key.pem"
    lines = []
    for name, lis in zip(names, listeners, strict=True):
        if lis.kind == "https":
            lines.append(f"https_port {HOST}:{lis.port} name={name} {tls}")
        else:
            lines.append(f"http_port {HOST}:{lis.port} name={name}")
    lines += [
        f"pid_filename {directory}/squid.pid",
        f"cache_log {directory}/cache.log",
        f"access_log stdio:{directory}/access.log",
        f"coredump_dir {directory}",
        "cache deny all",
        "pinger_enable off",
        "shutdown_lifetime 1 seconds",
        f"auth_param basic program {NCSA_AUTH} {directory}/passwd",
        "auth_param basic children 3 startup=3",
        "auth_param basic realm proxyfleet-static-e2e",
        "acl authed proxy_auth REQUIRED",
        "acl loopback_destinations dst 127.0.0.0/8",
        "http_access deny !loopback_destinations",
        "http_access allow authed",
        "http_access deny all",
    ]
    for name, lis in zip(names, listeners, strict=True):
        lines += [
            f"acl via_{name} myportname {name}",
            f"tcp_outgoing_address {lis.exit} via_{name}",
        ]
    return "\n".join(lines) + "\n"


def distinct_free_ports(count: int, taken: set[int]) -> list[int]:
    """`count` free ports, none of them in `taken` and no two alike (each is held bound
    until all are picked: one at a time, the kernel may hand a port out twice)."""
    with contextlib.ExitStack() as held:
        ports: list[int] = []
        while len(ports) < count:
            s = held.enter_context(socket.socket())
            s.bind((HOST, 0))
            if (port := int(s.getsockname()[1])) not in taken:
                ports.append(port)
        return ports


@contextlib.contextmanager
def running_multi_squid(
    kinds: list[str], users: list[tuple[str, str]]
) -> Iterator[tuple[list[Listener], str]]:
    """One Squid with a listener of each kind (http, https), listener i leaving from
    127.0.23.(i+1), every user of `users` admitted on each; (the listeners, the CA file
    of the https ones)."""
    squid = require_binary(find_squid() or "squid", "squid")
    root = make_root("pf-static-squid-")
    try:
        files = make_tls_material(root, reuse=False)
        (root / "passwd").write_text("".join(htpasswd_line(u, p) for u, p in users))
        names = [f"l{i}" for i in range(len(kinds))]
        chosen: list[Listener] = []

        def argv(port: int) -> list[str]:
            ports = [port, *distinct_free_ports(len(kinds) - 1, taken={port})]
            exits = [SQUID_EXITS.format(i + 1) for i in range(len(kinds))]
            chosen[:] = [Listener(k, p, e) for k, p, e in zip(kinds, ports, exits, strict=True)]
            (root / "squid.conf").write_text(squid_conf(str(root), chosen, names))
            hand_to_proxy_user(root)
            return [squid, "-N", "-f", str(root / "squid.conf"), "-n", f"pfstatic{port}"]

        proc, _ = start_listening(argv, root, HOST)
        try:
            for lis in chosen:  # the first accepts: the others are bound by then
                assert accepts(HOST, lis.port), f"squid is not listening on {lis.port}"
            yield list(chosen), str(files.ca)
        finally:
            stop(proc)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class Upstreams:
    first: list[Entry]
    """The 50 lines of the list as first written."""
    spare: list[Entry]
    """Lines the edit adds (their upstreams run from the start)."""
    ca_file: str
    """The CA of the https listeners."""
    vendor: VendorGateway

    def all_secrets(self) -> set[str]:
        return {s for e in (*self.first, *self.spare) for s in e.secrets}


SOCKS = 9
"""microsocks instances: 4 socks5 and 4 socks5h lines, and one added by the edit."""
SQUID_KINDS = ["https"] * 6 + ["http"] * 18
"""Squid listeners: 6 https lines and 16 http ones, and two http ones added by the edit."""
VENDOR_SESSIONS = 22
"""Vendor sessions: 20 lines and two added by the edit."""


@contextlib.contextmanager
def running_upstreams() -> Iterator[Upstreams]:
    """Every upstream of the journey, stopped (by pid) when the block ends."""
    with contextlib.ExitStack() as stack:
        socks: list[Entry] = []
        for n in range(SOCKS):
            user, password = f"sock{n}", _secret("socks", n)
            exit_address = SOCKS_EXITS.format(n + 1)
            up = stack.enter_context(running_socks5(user, password, exit_address))
            scheme = "socks5" if n % 2 == 0 else "socks5h"
            socks.append(Entry(up.url(scheme), scheme, exit_address, (password,)))
        users = [(f"sq{n}", _secret("squid", n)) for n in range(len(SQUID_KINDS))]
        listeners, ca_file = stack.enter_context(running_multi_squid(SQUID_KINDS, users))
        squids = []
        for n, (lis, (user, password)) in enumerate(zip(listeners, users, strict=True)):
            form = "url" if lis.kind == "https" else ("url", "hpup", "upat")[n % 3]
            line = paste(lis.kind, lis.port, user, password, form)
            squids.append(Entry(line, lis.kind, lis.exit, (password,)))
        gw = stack.enter_context(running_vendor_gateway(exit_base=VENDOR_EXIT_BASE))
        vendor = []
        for n in range(VENDOR_SESSIONS):
            session = f"{n:02d}{secrets.token_hex(4)}"
            secret = (gw.password, gw.username(session), session)
            vendor.append(Entry(gw.url(session), "http", "", secret, session))
        first = [*socks[:8], *squids[:22], *vendor[:20]]
        spare = [socks[8], *squids[22:], *vendor[20:]]
        yield Upstreams(first, spare, ca_file, gw)
