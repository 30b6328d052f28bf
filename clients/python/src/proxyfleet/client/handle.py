"""What a lease held in a `with` block shows and how often it is renewed (no I/O)."""

from __future__ import annotations

from dataclasses import dataclass

from proxyfleet.client.errors import ApiError, Conflict, NotFound
from proxyfleet.client.models import Lease

MIN_RENEW_INTERVAL = 0.2
"""Seconds: the renewer never calls the API more often than this."""


def renew_interval(granted_seconds: float) -> float:
    """Renew when half the granted time has passed: a failed renewal still leaves the other
    half to try again before the lease expires."""
    return max(MIN_RENEW_INTERVAL, granted_seconds / 2)


def lease_ended(error: ApiError) -> bool:
    """The lease is gone (released, expired, revoked, or another epoch): stop renewing."""
    return isinstance(error, NotFound | Conflict)


@dataclass
class LeaseHandle:
    """A granted lease and its proxy, in the forms HTTP libraries take."""

    lease: Lease
    ttl: float | None
    """The TTL asked for (None: the API's default); every renewal asks for it again."""
    released: bool = False
    renew_error: ApiError | None = None
    """Why background renewal stopped early (the lease ended), else None."""

    @property
    def lease_id(self) -> str:
        return self.lease.lease_id

    @property
    def epoch(self) -> int:
        return self.lease.epoch

    @property
    def expires_at(self) -> float:
        """Server time (epoch seconds) the lease ends unless renewed."""
        return self.lease.expires_at

    @property
    def proxy_url(self) -> str:
        """http://user:password@host:port."""
        return self.lease.proxy.url

    @property
    def proxies(self) -> dict[str, str]:
        """For requests: `requests.get(url, proxies=lease.proxies)`."""
        return {"http": self.proxy_url, "https": self.proxy_url}

    @property
    def httpx_proxy(self) -> str:
        """For httpx: `httpx.Client(proxy=lease.httpx_proxy)`."""
        return self.proxy_url

    @property
    def renew_every(self) -> float:
        """Seconds between renewals, from what the grant gave (the API may cap the TTL)."""
        return renew_interval(max(0.0, self.lease.expires_at - self.lease.granted_at))

    def renewed(self, expires_at: float, epoch: int) -> None:
        # granted_at moves with expires_at so renew_every stays the granted TTL's half.
        self.lease.granted_at += expires_at - self.lease.expires_at
        self.lease.expires_at = expires_at
        self.lease.epoch = epoch


class LeaseView:
    """The handle's properties on the object a `with` block gets."""

    _handle: LeaseHandle | None

    @property
    def handle(self) -> LeaseHandle:
        if self._handle is None:
            raise RuntimeError("the lease is granted when the `with` block is entered")
        return self._handle

    @property
    def lease(self) -> Lease:
        return self.handle.lease

    @property
    def lease_id(self) -> str:
        return self.handle.lease_id

    @property
    def epoch(self) -> int:
        return self.handle.epoch

    @property
    def expires_at(self) -> float:
        return self.handle.expires_at

    @property
    def proxy_url(self) -> str:
        """http://user:password@host:port."""
        return self.handle.proxy_url

    @property
    def proxies(self) -> dict[str, str]:
        """For requests: {"http": url, "https": url}."""
        return self.handle.proxies

    @property
    def httpx_proxy(self) -> str:
        """For httpx: `httpx.Client(proxy=lease.httpx_proxy)`."""
        return self.handle.httpx_proxy

    @property
    def renew_error(self) -> ApiError | None:
        """Why background renewal stopped (the lease ended), else None."""
        return self.handle.renew_error
