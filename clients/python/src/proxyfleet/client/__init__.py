"""Python client for the Proxyfleet API.

    from proxyfleet.client import Client

    with Client("http://127.0.0.1:8080", "TOKEN") as client:
        with client.lease(target="example.com", ttl=120) as lease:
            requests.get("https://example.com/", proxies=lease.proxies)

`AsyncClient` is the same with `async with` and `await`.
"""

from proxyfleet.client.aio import AsyncClient
from proxyfleet.client.aio_held_lease import AsyncHeldLease
from proxyfleet.client.errors import (
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    NotFound,
    ProxyfleetError,
    RateLimited,
    ServerError,
    TransportError,
    Unauthorized,
    Unavailable,
)
from proxyfleet.client.models import (
    Event,
    EventData,
    Gap,
    KeptProxies,
    Lease,
    LeasedProxy,
    LeasePage,
    LeaseState,
    Pool,
    PoolCondition,
    PoolDecision,
    PoolStatus,
    Probe,
    Provider,
    ProviderEntry,
    Proxy,
    ProxyPage,
    ReleasedLease,
    RenewedLease,
    ReportedLease,
)
from proxyfleet.client.sync import Client
from proxyfleet.client.sync_held_lease import HeldLease
from proxyfleet.client.usage_calls import DayUsage, Usage

__all__ = [
    "ApiError",
    "AsyncClient",
    "AsyncHeldLease",
    "BadRequest",
    "Client",
    "Conflict",
    "DayUsage",
    "Event",
    "EventData",
    "Forbidden",
    "Gap",
    "HeldLease",
    "KeptProxies",
    "Lease",
    "LeasePage",
    "LeaseState",
    "LeasedProxy",
    "NotFound",
    "Pool",
    "PoolCondition",
    "PoolDecision",
    "PoolStatus",
    "Probe",
    "Provider",
    "ProviderEntry",
    "Proxy",
    "ProxyPage",
    "ProxyfleetError",
    "RateLimited",
    "ReleasedLease",
    "RenewedLease",
    "ReportedLease",
    "ServerError",
    "TransportError",
    "Unauthorized",
    "Unavailable",
    "Usage",
]
