"""The provider contract (tests/contract) against the static provider, whose "resources"
are upstreams that exist outside Proxyfleet: a real TCP listener on loopback per spec.

Four promises read differently for a provider that creates nothing, and are overridden
here under the same names (so the base versions do not run), each saying what holds
instead: `delete` forgets and leaves the upstream running; `list_managed` lists nothing,
so GC never deletes an upstream and re-adoption never rebuilds one (the syncer registers
its sources' proxies again); a create does no I/O, so an upstream that is down is no
temporary error (health finds it). The vendor path (a pool's or the API's proxy gets a
session of its own) is checked beside them.
"""

from __future__ import annotations

import asyncio
import secrets
import socket
from collections.abc import Iterator

import pytest
from tests.contract.provider_contract import (
    MakeProvider,
    MakeSpec,
    PlantForeign,
    ProviderContract,
    ResourcesOf,
    new_proxy_id,
)

from proxyfleet.common.providers import parse_providers_config
from proxyfleet.common.wire.models import ProxySpec, Scheme
from proxyfleet.provisioner_static.adapter import StaticProvider
from proxyfleet.provisioner_static.pure.config import StaticProviderConfig

VENDOR = """
    static:
      vendor:
        endpoint: socks5h://127.0.0.1:{port}
        username: customer-acme-country-{{country}}-session-{{session}}
        password: vendor-pw
        sessions: 0
        params: {{country: de}}
"""


def static_entry(name: str = "st", vendor_port: int | None = None) -> StaticProviderConfig:
    text = f"providers:\n  - name: {name}\n    type: static\n    zones: [z1]\n"
    if vendor_port is not None:
        text += VENDOR.format(port=vendor_port)
    return parse_providers_config(text, "p.yaml").get(name, StaticProviderConfig)


@pytest.fixture
def upstream() -> Iterator[int]:
    """An upstream that runs whatever Proxyfleet does: a loopback listener."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield int(server.getsockname()[1])


def upstream_spec(proxy_id: str, installation_id: str, port: int) -> ProxySpec:
    return ProxySpec(
        proxy_id=proxy_id,
        installation_id=installation_id,
        zone="z1",
        username="u",
        password=secrets.token_urlsafe(12),
        placement={"source": "inline", "host": "127.0.0.1", "port": str(port)},
    )


async def listening(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return False
    writer.close()
    await writer.wait_closed()
    return True


class TestStaticProviderContract(ProviderContract):
    @pytest.fixture
    def make_provider(self) -> MakeProvider:
        return lambda: StaticProvider(static_entry())

    @pytest.fixture
    def make_spec(self, installation_id: str, upstream: int) -> MakeSpec:
        return lambda proxy_id: upstream_spec(proxy_id, installation_id, upstream)

    @pytest.fixture
    def resources_of(self, upstream: int) -> ResourcesOf:
        """The upstream, while it listens (read from the socket, not the adapter)."""

        async def upstreams(proxy_id: str) -> list[str]:
            return [f"127.0.0.1:{upstream}"] if await listening(upstream) else []

        return upstreams

    @pytest.fixture
    def plant_foreign_resource(self) -> PlantForeign:
        async def plant(proxy_id: str) -> None:
            """Nothing to plant: no listing is ever made."""

        return plant

    @pytest.fixture
    def refused_spec(self, make_spec: MakeSpec) -> tuple[ProxySpec, str]:
        """Without a vendor, a proxy no source lists (a pool's, POST /v1/proxies')."""
        spec = make_spec(new_proxy_id())
        spec.placement = {}
        return spec, "only has the proxies its sources list"

    async def test_delete_removes_everything_and_again_succeeds(
        self, make_provider: MakeProvider, make_spec: MakeSpec, resources_of: ResourcesOf
    ) -> None:
        """Static: delete forgets; the upstream runs on (it is not Proxyfleet's)."""
        provider, spec = make_provider(), make_spec(new_proxy_id())
        first = await provider.create(spec)
        await provider.delete(spec.proxy_id, first.resource_id)
        await provider.delete(spec.proxy_id, first.resource_id)
        await provider.delete(spec.proxy_id, "")
        assert await resources_of(spec.proxy_id) == ["127.0.0.1:" + spec.placement["port"]]
        assert await provider.list_managed() == []

    async def test_list_managed_returns_this_installations_resources_with_ids_and_ages(  # type: ignore[override]  # other fixtures
        self, make_provider: MakeProvider, make_spec: MakeSpec
    ) -> None:
        """Static: nothing is listed, so GC never deletes an upstream."""
        provider = make_provider()
        for _ in range(2):
            await provider.create(make_spec(new_proxy_id()))
        assert await provider.list_managed() == []

    async def test_a_listed_resource_carries_what_rebuilds_its_proxy(  # type: ignore[override]  # other fixtures
        self, make_provider: MakeProvider, make_spec: MakeSpec
    ) -> None:
        """Static: nothing to re-adopt from (the syncer registers its sources again); a
        create from the stored spec alone gives the same answer on a new instance."""
        spec = make_spec(new_proxy_id())
        first = await make_provider().create(spec)
        restarted = make_provider()
        assert await restarted.list_managed() == []
        assert await restarted.create(spec) == first
        assert (first.host, first.port, first.zone) == (
            "127.0.0.1",
            int(spec.placement["port"]),
            "",
        )
        assert (first.username, first.password, first.scheme) == ("", "", None)  # as stored

    async def test_an_unreachable_backend_is_a_temporary_error_with_the_reason(  # type: ignore[override]  # other fixtures
        self, make_provider: MakeProvider, make_spec: MakeSpec, upstream: int
    ) -> None:
        """Static: a create does no I/O; an upstream that is down is health's to find."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            down = int(s.getsockname()[1])  # bound, never listening
            spec = make_spec(new_proxy_id())
            spec.placement["port"] = str(down)
            done = await make_provider().create(spec)
        assert (done.host, done.port) == ("127.0.0.1", down)


async def test_a_vendor_proxy_a_pool_makes_gets_a_session_of_its_own(upstream: int) -> None:
    provider = StaticProvider(static_entry(vendor_port=upstream))
    specs = [upstream_spec(new_proxy_id(), "inst", upstream) for _ in range(3)]
    for spec in specs:
        spec.placement = {}  # as a pool or POST /v1/proxies makes it
    made = [await provider.create(spec) for spec in specs]
    assert len({m.username for m in made}) == 3
    for spec, m in zip(specs, made, strict=True):
        assert m.username.startswith("customer-acme-country-de-session-")
        assert (m.host, m.port, m.password, m.scheme) == (
            "127.0.0.1",
            upstream,
            "vendor-pw",
            Scheme.SOCKS5H,
        )
        assert m.password != spec.password
        assert await StaticProvider(static_entry(vendor_port=upstream)).create(spec) == m
