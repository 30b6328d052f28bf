"""Which host a create goes to: the host that has the proxy's domain (adopt it), else the
host its pin names, else the one with the most room (`pure.host_choice`), from a listing of
every host of the proxy's zone. A host that fails to answer is left out for a while."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import (
    PermanentProviderError,
    ProviderError,
    TemporaryProviderError,
)
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.wire.models import ProxySpec
from proxyfleet.provisioner_kvm.coordination import PlacementPins
from proxyfleet.provisioner_kvm.domains import Domains
from proxyfleet.provisioner_kvm.host import HostSession
from proxyfleet.provisioner_kvm.metrics import HOSTS_DOWN
from proxyfleet.provisioner_kvm.pure.host_choice import (
    Adopt,
    Answered,
    Down,
    DownMarks,
    HostReport,
    NoHost,
    choose_host,
)
from proxyfleet.provisioner_kvm.pure.names import proxy_id_from_domain_name

log = get_logger("proxyfleet.kvm")


class HostPlacement:
    """Chooses the host of each create, counting the creates under way as load."""

    def __init__(
        self,
        pins: PlacementPins,
        host_retry_after: float,
        clock: Clock,
    ) -> None:
        self._pins = pins
        self._retry_after = host_retry_after
        self._clock = clock
        self._down = DownMarks(host_retry_after)
        self._under_way: dict[str, str] = {}
        """Proxy -> host of the creates placed and running now (they count as load)."""

    @contextmanager
    def under_way(self, proxy_id: str, host: str) -> Iterator[None]:
        """While the proxy's create runs on `host`, it counts as load there."""
        self._under_way[proxy_id] = host
        try:
            yield
        finally:
            self._under_way.pop(proxy_id, None)

    async def place(
        self, spec: ProxySpec, sessions: Mapping[str, HostSession]
    ) -> tuple[HostSession, bool]:
        """The host for this proxy among `sessions`, and whether its listing has the proxy's
        domain (made by an earlier attempt: adopt it), from a listing of every host of its
        zone (`pure.host_choice`)."""
        zone = [s for s in sessions.values() if s.host.zone == spec.zone]
        if not zone:
            raise PermanentProviderError(f"no KVM host serves zone {spec.zone!r}")
        pinned = await self._pins.get(spec.proxy_id)
        pins = {spec.proxy_id: pinned} if pinned is not None else {}
        reports = await asyncio.gather(*(self._survey(s) for s in zone))
        choice = choose_host(spec.proxy_id, spec.zone, reports, pins, self._under_way)
        if isinstance(choice, NoHost) and any(isinstance(r, Down) and r.held for r in reports):
            # Nothing fits without the hosts left out: try them now rather than wait out
            # their marks (a zone's only host, or the proxy's pinned one, may be back).
            reports = await asyncio.gather(
                *(self._survey(s, earlier=r) for s, r in zip(zone, reports, strict=True))
            )
            choice = choose_host(spec.proxy_id, spec.zone, reports, pins, self._under_way)
        if isinstance(choice, NoHost):
            error = PermanentProviderError if choice.permanent else TemporaryProviderError
            raise error(choice.message)
        return sessions[choice.host], isinstance(choice, Adopt)

    async def _survey(self, session: HostSession, earlier: HostReport | None = None) -> HostReport:
        """The Proxyfleet domains on one host (one listing call), or why it is down. A host
        that fails is left out for `host_retry_after` seconds: not tried by each create.
        Given its `earlier` report, the host is listed only if that one left it out."""
        host = session.host
        if earlier is not None:
            if not (isinstance(earlier, Down) and earlier.held):
                return earlier
        elif (marked := self._down.get(host.name, self._clock.now())) is not None:
            return marked
        try:
            names = await Domains(session).names()
        except ProviderError as exc:
            down = Down(host.name, str(exc), isinstance(exc, PermanentProviderError))
            self._down.mark(down, self._clock.now())
            HOSTS_DOWN.labels(host.name).inc()
            log.warning(
                "kvm.host_down",
                host=host.name,
                zone=host.zone,
                error=down.error,
                retry_after=self._retry_after,
            )
            return down
        proxies = frozenset(p for n in names if (p := proxy_id_from_domain_name(n)) is not None)
        return Answered(host.name, proxies, host.max_proxies)
