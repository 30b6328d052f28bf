"""The clients of the static journey, each a bounded loop in a thread of its own: grant and
release cycles through the API, and CONNECTs through the gateway to the loopback echo
target. Each records what it got, for the journey to judge afterwards."""

from __future__ import annotations

import base64
import json
import socket
import ssl
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import httpx

from proxyfleet.devstack.stack import Stack

PACE = 0.02
"""Seconds a client waits between two cycles: a client's pace, not a synchronisation."""
MAX_CYCLES = 3000
"""Every loop ends by this many cycles even if never told to stop."""


@dataclass(frozen=True, slots=True)
class Grant:
    asked_at: float
    """time.monotonic() when the request went out."""
    status: int
    proxy_id: str
    release_status: int = 0


@dataclass(frozen=True, slots=True)
class Tunnel:
    asked_at: float
    status_line: str
    proxy_id: str
    seen_ip: str
    received: bytes
    """Everything the client got: the gateway's answer to CONNECT, then the page."""


@dataclass
class Load(ABC):
    """A loop in a thread of its own from `start` until `finish` (or MAX_CYCLES)."""

    stack: Stack
    provider: str
    stop: threading.Event = field(default_factory=threading.Event)
    errors: list[str] = field(default_factory=list)
    thread: threading.Thread | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self.run, name=type(self).__name__, daemon=True)
        self.thread.start()

    def run(self) -> None:
        try:
            for _ in range(MAX_CYCLES):
                if self.stop.is_set():
                    return
                self.cycle()
                self.stop.wait(PACE)
        except Exception as exc:  # reported by the journey, not lost in a thread
            self.errors.append(repr(exc))

    @abstractmethod
    def cycle(self) -> None:
        """One round of the load (a grant and release, a tunnel)."""

    def finish(self) -> None:
        self.stop.set()
        assert self.thread is not None
        self.thread.join(30)
        assert not self.thread.is_alive(), f"{type(self).__name__} did not stop"
        assert not self.errors, self.errors


@dataclass
class ApiLoad(Load):
    """Grant one proxy of the provider, release it at once: every answer is a grant (201)
    or none free (503), and every release of a granted lease succeeds."""

    grants: list[Grant] = field(default_factory=list)
    http: httpx.Client = field(init=False)

    def run(self) -> None:
        headers = {"Authorization": f"Bearer {self.stack.client_token}"}
        with httpx.Client(base_url=self.stack.api_url, headers=headers, timeout=10) as http:
            self.http = http
            super().run()

    def cycle(self) -> None:
        asked = time.monotonic()
        body = {"provider": self.provider, "ttl": 30, "holder": "e2e-api"}
        r = self.http.post("/v1/leases", json=body)
        if r.status_code != 201:
            self.grants.append(Grant(asked, r.status_code, ""))
            return
        lease = r.json()
        done = self.http.post(
            f"/v1/leases/{lease['lease_id']}/release", json={"epoch": lease["epoch"]}
        )
        self.grants.append(Grant(asked, 201, lease["proxy"]["id"], done.status_code))


@dataclass
class GatewayLoad(Load):
    """A CONNECT through the gateway (a proxy of the provider per connection), then the
    echo target's page inside the tunnel."""

    tunnels: list[Tunnel] = field(default_factory=list)

    def cycle(self) -> None:
        asked = time.monotonic()
        self.tunnels.append(through_gateway(self.stack, f"e2e-provider-{self.provider}", asked))


def through_gateway(stack: Stack, username: str, asked: float) -> Tunnel:
    """CONNECT to the target through the gateway as `username` (raw socket: every byte the
    client receives is kept), then GET the target's page inside the tunnel."""
    gateway = stack.gateway_url.removeprefix("http://")
    host, port = gateway.rsplit(":", 1)
    target = stack.target_url.removeprefix("https://").rstrip("/")
    auth = base64.b64encode(f"{username}:{stack.client_token}".encode()).decode()
    request = (
        f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\nProxy-Authorization: Basic {auth}\r\n\r\n"
    )
    with socket.create_connection((host, int(port)), timeout=15) as raw:
        raw.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = raw.recv(4096)
            if not chunk:
                break
            head += chunk
        status_line = head.split(b"\r\n", 1)[0].decode(errors="replace")
        proxy_id = _header(head, "x-proxyfleet-proxy-id")
        if " 200 " not in status_line + " ":
            return Tunnel(asked, status_line, proxy_id, "", head)
        context = ssl.create_default_context(cafile=stack.ca_file)
        with context.wrap_socket(raw, server_hostname=target.rsplit(":", 1)[0]) as tls:
            tls.sendall(f"GET /probe HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
            page = b""
            while chunk := tls.recv(65536):
                page += chunk
    body = page.split(b"\r\n\r\n", 1)[-1]
    return Tunnel(asked, status_line, proxy_id, str(json.loads(body)["ip"]), head + page)


def _header(head: bytes, name: str) -> str:
    for line in head.decode(errors="replace").split("\r\n")[1:]:
        key, _, value = line.partition(":")
        if key.strip().lower() == name:
            return value.strip()
    return ""
