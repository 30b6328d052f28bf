"""A bounded grant/release load: N client threads, each grant -> short hold -> release,
recording every request and every 2xx lease with its proxy, epoch and times."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import httpx
from tests.faults.audit import Lease, Request
from tests.faults.harness import auth

RELEASE_FOR = 20.0
"""Seconds a client keeps trying to release one lease (bounded even through an outage)."""


@dataclass
class Load:
    urls: list[str]
    token: str
    clients: int = 4
    hold: float = 0.05
    ttl: int = 10
    selector: dict[str, object] = field(default_factory=dict)
    """More of the grant's body (labels, provider, zone): which proxies the load takes."""
    requests: list[Request] = field(default_factory=list)
    leases: list[Lease] = field(default_factory=list)
    passwords: set[str] = field(default_factory=set)
    """Proxy passwords seen in grants: the log audit looks for them."""
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def __enter__(self) -> Load:
        for i in range(self.clients):
            t = threading.Thread(target=self._client, args=(i,), daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(RELEASE_FOR + 15)

    def _call(self, http: httpx.Client, op: str, path: str, body: object) -> httpx.Response | None:
        t0 = time.time()
        try:
            r: httpx.Response | None = http.post(path, json=body)
        except httpx.HTTPError:
            r = None
        code = ""
        if r is not None and not r.is_success:
            try:
                code = str(r.json().get("error", ""))
            except ValueError:
                code = "not-json"
        self.requests.append(Request(op, t0, time.time() - t0, r.status_code if r else 0, code))
        return r

    def _client(self, i: int) -> None:
        url = self.urls[i % len(self.urls)]
        with httpx.Client(base_url=url, headers=auth(self.token), timeout=5) as http:
            while not self._stop.is_set():
                r = self._call(
                    http,
                    "grant",
                    "/v1/leases",
                    {"ttl": self.ttl, "holder": f"c{i}", **self.selector},
                )
                if r is None or r.status_code != 201:
                    self._stop.wait(_pause(r))
                    continue
                body = r.json()
                self.passwords.add(
                    body["proxy"]["url"].split("//", 1)[1].rsplit("@", 1)[0].split(":", 1)[1]
                )
                granted = time.time()
                time.sleep(self.hold)
                self.leases.append(self._release(http, body, granted))

    def _release(self, http: httpx.Client, body: dict[str, object], granted: float) -> Lease:
        lease_id, epoch = str(body["lease_id"]), body["epoch"]
        proxy = body["proxy"]
        assert isinstance(proxy, dict)
        first = time.time()
        status = 0
        while time.time() - first < RELEASE_FOR:
            r = self._call(http, "release", f"/v1/leases/{lease_id}/release", {"epoch": epoch})
            status = r.status_code if r is not None else 0
            if status in (200, 404, 409):
                break
            time.sleep(_pause(r))
        assert isinstance(epoch, int)
        return Lease(
            lease_id=lease_id,
            proxy_id=str(proxy["id"]),
            epoch=epoch,
            granted_at=granted,
            expires_at=float(str(body["expires_at"])),
            release_sent=first,
            release_status=status,
        )


def _pause(r: httpx.Response | None) -> float:
    """After a refusal: Retry-After, capped so the load keeps probing the API."""
    if r is None:
        return 0.2
    try:
        return min(float(r.headers.get("retry-after", "0.1")), 0.5)
    except ValueError:
        return 0.1
