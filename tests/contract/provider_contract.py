"""What every `Provider` (proxyfleet.common.providers.port) must do, as one suite each adapter runs.

The runner, GC and health rely on these promises whatever the infrastructure: `create` is
idempotent and adopts what exists (a redelivered intent or a restarted provisioner never
makes a second resource), `delete` of what is gone succeeds, `list_managed` returns this
installation's resources only, with proxy ids and ages (GC deletes from that list), every
failure is a `TemporaryProviderError` or a `PermanentProviderError` carrying the provider's
message (the runner retries the one and fails the proxy on the other), `close` may be
called twice and leaves resources running, and a create made where it was asked names no
other zone (`Provisioned.zone` is "" or the spec's: the runner would move the proxy).

How to run it against a provider (tests/provisioner/test_local_contract.py,
tests/kvm/test_test_driver_contract.py and tests/kvm/test_libvirtd_contract.py are the
examples; GCP and Kubernetes adapters add theirs the same way):

    class TestGcpProviderContract(ProviderContract):
        @pytest.fixture
        def make_provider(self, installation_id, ...) -> Iterator[MakeProvider]:
            ...  # a factory: a new adapter instance for `installation_id` per call,
            ...  # every one closed at teardown
        @pytest.fixture
        def make_spec(self, installation_id) -> MakeSpec: ...
        @pytest.fixture
        def resources_of(self) -> ResourcesOf: ...
        @pytest.fixture
        def plant_foreign_resource(self) -> PlantForeign: ...
        @pytest.fixture
        def refused_spec(self, make_spec) -> tuple[ProxySpec, str]: ...
        @pytest.fixture
        def unreachable(self, ...) -> tuple[Provider, ProxySpec, str]: ...

The fixtures, each overridden by a fixture of the same name in the subclass:

- `installation_id`: given here, one per test, so listings see only this test's resources.
- `make_provider()`: a new adapter instance (a second one stands for a restarted
  provisioner); the subclass closes every instance at teardown.
- `make_spec(proxy_id)`: a spec the provider can create (right zone, installation).
- `resources_of(proxy_id)`: identities of that proxy's resources read from the backend
  directly, not through the adapter (process ids, domain UUIDs, instance ids): one after a
  create, the same one after a second create, none after a delete.
- `plant_foreign_resource(proxy_id)`: make, in the same backend, a resource of that proxy
  id that belongs to another installation.
- `refused_spec`: a spec the provider must refuse for good (an invalid placement, say),
  and a regex its message matches.
- `unreachable`: an adapter whose backend cannot be reached (a host that is down), a spec
  for it, and a regex its error matches.

A provider whose `create` cannot finish on a test backend (a VM with no guest OS gets no
address) overrides `create` to expect that error and return None; the checks on the
resources still hold.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable

import pytest

from proxyfleet.common.core.errors import PermanentProviderError, TemporaryProviderError
from proxyfleet.common.providers.port import Provider
from proxyfleet.common.wire.models import Provisioned, ProxySpec

MakeProvider = Callable[[], Provider]
MakeSpec = Callable[[str], ProxySpec]
ResourcesOf = Callable[[str], Awaitable[list[str]]]
PlantForeign = Callable[[str], Awaitable[None]]
FOREIGN_INSTALLATION = "contract-foreign"
"""The installation id of planted resources."""


def new_proxy_id() -> str:
    return f"pct{secrets.token_hex(4)}"


class ProviderContract:
    """The contract; subclasses named Test* run it (this class itself is not collected)."""

    # ---- fixtures a subclass provides ------------------------------------------------

    @pytest.fixture
    def installation_id(self) -> str:
        return f"contract-{secrets.token_hex(3)}"

    @pytest.fixture
    def make_provider(self) -> MakeProvider:
        raise NotImplementedError("a ProviderContract subclass defines make_provider")

    @pytest.fixture
    def make_spec(self) -> MakeSpec:
        raise NotImplementedError("a ProviderContract subclass defines make_spec")

    @pytest.fixture
    def resources_of(self) -> ResourcesOf:
        raise NotImplementedError("a ProviderContract subclass defines resources_of")

    @pytest.fixture
    def plant_foreign_resource(self) -> PlantForeign:
        raise NotImplementedError("a ProviderContract subclass defines plant_foreign_resource")

    @pytest.fixture
    def refused_spec(self) -> tuple[ProxySpec, str]:
        raise NotImplementedError("a ProviderContract subclass defines refused_spec")

    @pytest.fixture
    def unreachable(self) -> tuple[Provider, ProxySpec, str]:
        raise NotImplementedError("a ProviderContract subclass defines unreachable")

    async def create(self, provider: Provider, spec: ProxySpec) -> Provisioned | None:
        """Create as far as this backend lets a create go (see the module docstring)."""
        return await provider.create(spec)

    # ---- the contract ----------------------------------------------------------------

    async def test_create_twice_makes_one_resource(
        self, make_provider: MakeProvider, make_spec: MakeSpec, resources_of: ResourcesOf
    ) -> None:
        provider, spec = make_provider(), make_spec(new_proxy_id())
        first = await self.create(provider, spec)
        made = await resources_of(spec.proxy_id)
        assert len(made) == 1, made
        second = await self.create(provider, spec)
        assert await resources_of(spec.proxy_id) == made
        assert second == first
        assert first is None or first.zone in ("", spec.zone)

    async def test_a_new_instance_adopts_the_existing_resource(
        self, make_provider: MakeProvider, make_spec: MakeSpec, resources_of: ResourcesOf
    ) -> None:
        spec = make_spec(new_proxy_id())
        first = await self.create(make_provider(), spec)
        made = await resources_of(spec.proxy_id)
        restarted = make_provider()  # a provisioner that came back after a crash
        assert await self.create(restarted, spec) == first
        assert await resources_of(spec.proxy_id) == made

    async def test_delete_removes_everything_and_again_succeeds(
        self, make_provider: MakeProvider, make_spec: MakeSpec, resources_of: ResourcesOf
    ) -> None:
        provider, spec = make_provider(), make_spec(new_proxy_id())
        await self.create(provider, spec)
        [listed] = [r for r in await provider.list_managed() if r.proxy_id == spec.proxy_id]
        await provider.delete(spec.proxy_id, listed.resource_id)
        assert await resources_of(spec.proxy_id) == []
        assert spec.proxy_id not in {r.proxy_id for r in await provider.list_managed()}
        await provider.delete(spec.proxy_id, listed.resource_id)
        await provider.delete(spec.proxy_id, "")  # no resource id: the create never finished

    async def test_delete_of_a_proxy_never_created_succeeds(
        self, make_provider: MakeProvider
    ) -> None:
        await make_provider().delete(new_proxy_id(), "")

    async def test_list_managed_returns_this_installations_resources_with_ids_and_ages(
        self,
        make_provider: MakeProvider,
        make_spec: MakeSpec,
        plant_foreign_resource: PlantForeign,
        installation_id: str,
    ) -> None:
        provider = make_provider()
        ours = [make_spec(new_proxy_id()) for _ in range(2)]
        for spec in ours:
            await self.create(provider, spec)
        foreign = new_proxy_id()
        await plant_foreign_resource(foreign)
        listed = await provider.list_managed()
        assert {r.proxy_id for r in listed} == {s.proxy_id for s in ours}
        for resource in listed:
            assert resource.installation_id == installation_id
            assert resource.resource_id
            assert 0 < resource.created_at <= time.time() + 1  # an age GC can compare

    async def test_a_listed_resource_carries_what_rebuilds_its_proxy(
        self, make_provider: MakeProvider, make_spec: MakeSpec, resources_of: ResourcesOf
    ) -> None:
        """Re-adoption after a store reset: the listing alone rebuilds the registry entry
        (zone, credentials, labels, placement; the address when known, else `create`
        with those adopts the resource and returns it), and nothing new is made."""
        spec = make_spec(new_proxy_id())
        first = await self.create(make_provider(), spec)
        made = await resources_of(spec.proxy_id)
        restarted = make_provider()
        [res] = [r for r in await restarted.list_managed() if r.proxy_id == spec.proxy_id]
        assert res.adoptable
        assert (res.zone, res.username, res.password) == (spec.zone, spec.username, spec.password)
        assert (res.labels, res.placement) == (spec.labels, spec.placement)
        if first is not None and res.host:
            assert (res.host, res.port, res.resource_id) == (
                first.host,
                first.port,
                first.resource_id,
            )
        rebuilt = ProxySpec(
            proxy_id=res.proxy_id,
            installation_id=res.installation_id,
            zone=res.zone,
            username=res.username,
            password=res.password,
            labels=res.labels,
            placement=res.placement,
        )
        assert await self.create(restarted, rebuilt) == first
        assert await resources_of(spec.proxy_id) == made

    async def test_a_refused_spec_is_a_permanent_error_with_the_reason(
        self, make_provider: MakeProvider, refused_spec: tuple[ProxySpec, str]
    ) -> None:
        spec, reason = refused_spec
        with pytest.raises(PermanentProviderError, match=reason):
            await make_provider().create(spec)

    async def test_an_unreachable_backend_is_a_temporary_error_with_the_reason(
        self, unreachable: tuple[Provider, ProxySpec, str]
    ) -> None:
        provider, spec, reason = unreachable
        with pytest.raises(TemporaryProviderError, match=reason) as caught:
            await provider.create(spec)
        assert str(caught.value)

    async def test_close_twice_leaves_the_resources_running(
        self, make_provider: MakeProvider, make_spec: MakeSpec, resources_of: ResourcesOf
    ) -> None:
        provider, spec = make_provider(), make_spec(new_proxy_id())
        await self.create(provider, spec)
        made = await resources_of(spec.proxy_id)
        await provider.close()
        await provider.close()
        assert await resources_of(spec.proxy_id) == made
