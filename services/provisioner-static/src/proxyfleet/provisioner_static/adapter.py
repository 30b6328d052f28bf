"""The static provider: the Provider port over proxies Proxyfleet did not create.

Nothing is provisioned and nothing outside Proxyfleet is ever touched: `create` answers
where the upstream a source listed listens (its placement `host` and `port`, written by
the syncer), or, for a proxy a pool or `POST /v1/proxies` made, opens a new session on the
vendor's gateway (a new session id, hence a new exit IP); `delete` forgets; `list_managed`
lists nothing, so GC and re-adoption never act on an upstream (the syncer registers its
sources' proxies again after a store reset).
"""

from __future__ import annotations

from proxyfleet.common.core.errors import PermanentProviderError
from proxyfleet.common.core.ids import resource_name
from proxyfleet.common.wire.models import ManagedResource, Provisioned, ProxySpec
from proxyfleet.provisioner_static.pure.config import StaticProviderConfig, VendorConfig
from proxyfleet.provisioner_static.pure.lines import ProxyLine, parse_line
from proxyfleet.provisioner_static.pure.plan import SOURCE
from proxyfleet.provisioner_static.pure.vendor import expand, session_id


def vendor_endpoint(vendor: VendorConfig) -> ProxyLine:
    """The gateway's address (checked at start: check_static_provider)."""
    line = parse_line(vendor.endpoint)
    assert line is not None
    return line


class StaticProvider:
    def __init__(self, entry: StaticProviderConfig) -> None:
        self._name = entry.name
        self._vendor = entry.static.vendor

    async def create(self, spec: ProxySpec) -> Provisioned:
        """Where the proxy's upstream listens; the same for the same spec (idempotent)."""
        resource_id = resource_name(spec.proxy_id)
        if spec.placement.get(SOURCE):
            host, port = spec.placement.get("host", ""), spec.placement.get("port", "")
            if not host or not port.isdigit():
                raise PermanentProviderError(
                    f"provider {self._name}: proxy {spec.proxy_id} has no upstream address"
                )
            return Provisioned(resource_id=resource_id, host=host, port=int(port))
        if self._vendor is None:
            raise PermanentProviderError(
                f"provider {self._name}: a static provider only has the proxies its sources"
                f" list (proxies, sources, POST /v1/providers/{self._name}/proxies); without"
                " a vendor it cannot make one for a pool or POST /v1/proxies"
            )
        return self._vendor_session(spec.proxy_id, resource_id, self._vendor)

    def _vendor_session(self, proxy_id: str, resource_id: str, vendor: VendorConfig) -> Provisioned:
        """A session of its own for a new proxy, derived from its id: a redelivered create
        gets the same one, another proxy another one."""
        session = session_id(self._name, proxy_id, vendor.session_length)
        where = vendor_endpoint(vendor)
        return Provisioned(
            resource_id=resource_id,
            host=where.host,
            port=where.port,
            username=expand(vendor.username, session, vendor.params),
            password=vendor.password,
            scheme=where.scheme,
        )

    async def delete(self, proxy_id: str, resource_id: str) -> None:
        """Forget: the upstream is not Proxyfleet's to stop (its registry entry goes)."""

    async def list_managed(self) -> list[ManagedResource]:
        """Nothing: GC never deletes and re-adoption never rebuilds an upstream."""
        return []

    async def close(self) -> None:
        """Nothing held."""
