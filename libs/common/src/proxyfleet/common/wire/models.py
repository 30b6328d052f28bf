"""Wire and state models (msgspec Structs; the events are in events.py). Shared by every
service; no I/O here."""

from __future__ import annotations

import enum
from urllib.parse import quote

import msgspec


class Phase(enum.StrEnum):
    PENDING = "pending"
    PROVISIONING = "provisioning"
    BOOTING = "booting"
    READY = "ready"
    UNHEALTHY = "unhealthy"
    DELETING = "deleting"
    DELETED = "deleted"
    FAILED = "failed"


class Scheme(enum.StrEnum):
    """The protocol a proxy speaks to its clients (the scheme of its URL)."""

    HTTP = "http"
    """HTTP CONNECT and absolute-URL requests, in the clear (every proxy Proxyfleet runs)."""
    HTTPS = "https"
    """The same inside TLS to the proxy (its certificate verified)."""
    SOCKS5 = "socks5"
    """SOCKS5 with username/password (RFC 1928/1929); the client resolves names."""
    SOCKS5H = "socks5h"
    """SOCKS5 with names resolved by the proxy (remote DNS)."""


def proxy_url(scheme: str, host: str, port: int, username: str = "", password: str = "") -> str:
    """A proxy's URL, credentials percent-encoded (a vendor's password may hold `@` or
    `:`) and an IPv6 host in brackets."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if not username and not password:
        return f"{scheme}://{where}"
    return f"{scheme}://{quote(username, safe='')}:{quote(password, safe='')}@{where}"


class Withheld(enum.StrEnum):
    """Why a proxy is kept out of grants whatever its phase (the store's `avail_add` never
    makes a withheld proxy grantable)."""

    NO = ""
    DRAINING = "draining"
    """Its pool recycles it, scales down or is deleted: leases run to their end (or to
    the pool's drain timeout), then the pool deletes it."""
    QUARANTINED = "quarantined"
    """Set aside for inspection (an admin, or its pool's quarantine rule): never granted,
    never deleted by its pool; an admin releases or deletes it."""


class LeaseOutcome(enum.StrEnum):
    OK = "ok"
    BLOCKED = "blocked"
    FAILED = "failed"


class Proxy(msgspec.Struct, kw_only=True):
    """A proxy as the registry stores it. `gen` increases on every transition."""

    id: str
    provider: str
    zone: str
    phase: Phase
    gen: int
    username: str
    password: str
    created_at: float
    updated_at: float
    """When the proxy entered its phase: set by every transition (and adoption), never by a
    field update; health's unhealthy timeout counts from it."""
    labels: dict[str, str] = {}
    placement: dict[str, str] = {}
    """Provider-specific placement hints (e.g. KVM `image` or `image_url`)."""
    host: str = ""
    port: int = 0
    resource_id: str = ""
    reason: str = ""
    boot_deadline: float = 0.0
    lease_id: str = ""
    epoch: int = 0
    ok_streak: int = 0
    fail_streak: int = 0
    last_probe_at: float = 0.0
    last_ok_at: float = 0.0
    """When health last probed this proxy successfully; grants skip one too long ago."""
    last_probe_error: str = ""
    latency_ms: float = 0.0
    egress_ip: str = ""
    """Its exit address as the echo target saw it, normalized ("" until known; a change
    is confirmed by health's --egress-confirm-after probes first)."""
    egress_net: str = ""
    """The network of egress_ip (an IPv4 /24 or IPv6 /64) that `subnet` exclusivity holds."""
    egress_pending: str = ""
    """A new exit address seen by the last probes but not yet confirmed."""
    egress_pending_n: int = 0
    """How many probes in a row saw egress_pending."""
    egress_shared: int = 0
    """How many proxies (itself included) leave through egress_ip: above 1, it is shared.
    Read from the address index with the proxy, never stored on it."""
    pool: str = ""
    """The pool it belongs to ("" for a one-off proxy); also its `proxyfleet-pool` label."""
    withheld: Withheld = Withheld.NO
    withheld_reason: str = ""
    withheld_at: float = 0.0
    scheme: Scheme = Scheme.HTTP
    """The protocol it speaks: health probes and the gateway speak it, a lease's URL
    carries it."""
    external: bool = False
    """Proxyfleet did not create it (a static provider's source lists it): nothing is ever
    deleted outside Proxyfleet, and a failed one stays failed, re-probed, until its source
    drops it."""

    def url(self, with_credentials: bool = True) -> str:
        if with_credentials:
            return proxy_url(self.scheme, self.host, self.port, self.username, self.password)
        return proxy_url(self.scheme, self.host, self.port)


class Lease(msgspec.Struct, kw_only=True):
    id: str
    proxy_id: str
    epoch: int
    holder: str
    target: str
    granted_at: float
    expires_at: float
    client: str = ""
    """The name of the token that granted it: its owner ("" for leases from before owners
    were recorded)."""
    reason: str = ""
    """Why a revoked lease was revoked (proxy unhealthy, failed, deleted, its exit address
    changed: `egress_changed`); else empty."""
    egress_ip: str = ""
    """Its proxy's exit address when granted ("" unknown), held exclusively by the lease
    unless the proxy's exclusivity is `none`."""
    bytes_up: int = 0
    bytes_down: int = 0
    """Bytes the gateway relayed on it (client to upstream, and back), recorded when the
    gateway released it; 0 for a lease used outside the gateway, or not released by it."""


# ---- intents (api/health/gc -> provisioner) -------------------------------------------


class CreateIntent(msgspec.Struct, kw_only=True, tag="create"):
    proxy_id: str


class DeleteIntent(msgspec.Struct, kw_only=True, tag="delete"):
    """Delete a proxy's resources. `resource_id` alone (no registry entry) comes from GC."""

    proxy_id: str
    resource_id: str = ""
    reason: str = ""


Intent = CreateIntent | DeleteIntent


class ProbeResult(msgspec.Struct, kw_only=True):
    proxy_id: str
    time: float
    ok: bool
    latency_ms: float
    error: str = ""
    egress_ip: str = ""


# ---- provider port payloads -----------------------------------------------------------


class ProxySpec(msgspec.Struct, kw_only=True):
    """What a provider needs to create one proxy."""

    proxy_id: str
    installation_id: str
    zone: str
    username: str
    password: str
    labels: dict[str, str] = {}
    placement: dict[str, str] = {}


class Provisioned(msgspec.Struct, kw_only=True):
    resource_id: str
    host: str
    port: int
    zone: str = ""
    """The provider zone the resource landed in when it is not the one the spec asked for
    (a create that failed over to another zone); "" = as requested. The runner moves the
    proxy to it in the registry with the create's result."""
    username: str = ""
    password: str = ""
    """The credentials the proxy takes when the provider chose them (a vendor session of a
    static provider); "" = the spec's. Never logged."""
    scheme: Scheme | None = None
    """How to speak to it when the provider says (a vendor's gateway); None = as stored."""


class ManagedResource(msgspec.Struct, kw_only=True):
    """A resource a provider manages, identified by the labels/metadata it carries, with
    what it takes to register its proxy again after a store reset (re-adoption)."""

    resource_id: str
    proxy_id: str
    installation_id: str
    created_at: float
    zone: str = ""
    host: str = ""
    """Where the proxy listens; "" when the listing cannot tell cheaply (a VM's address):
    re-adoption then asks the provider's `create`, which adopts and returns it."""
    port: int = 0
    username: str = ""
    password: str = ""
    """The proxy's credentials; "" for a resource made before resources carried them
    (not adoptable). The resources responder blanks it: GC never needs it."""
    labels: dict[str, str] = {}
    placement: dict[str, str] = {}

    @property
    def adoptable(self) -> bool:
        """Carries enough to register its proxy again."""
        return bool(self.zone and self.username and self.password)


class ResourceList(msgspec.Struct, kw_only=True):
    provider: str
    resources: list[ManagedResource]
    error: str = ""
