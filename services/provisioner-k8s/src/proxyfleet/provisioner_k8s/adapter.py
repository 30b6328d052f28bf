"""The Kubernetes provider: the Provider port over the official client.

create: make (or adopt, on 409) the proxy's pod, then its Secret, ConfigMap and, when
exposed outside the cluster, Service, each owned by the pod; then wait on the pod watch
until the pod has its IP (node_port: its node's address; load_balancer: the Service's
ingress address) and return it, so the runner moves the proxy to booting at once. A pod
that fails for good meanwhile (image pull, crash loop, OOM, eviction) is a permanent
error with that reason. delete: the pod and its objects; list_managed: the pods, with the
credentials read from their Secrets (re-adoption after a store reset needs them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection

from proxyfleet.common.core.clock import Clock, SystemClock
from proxyfleet.common.core.errors import (
    ConfigError,
    PermanentProviderError,
    TemporaryProviderError,
)
from proxyfleet.common.domain.squid import htpasswd_line
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.wire.models import ManagedResource, Provisioned, ProxySpec
from proxyfleet.provisioner_k8s.calls import Json, Kube, load_configuration
from proxyfleet.provisioner_k8s.objects import Objects, owned_by
from proxyfleet.provisioner_k8s.podwatch import PodWatch
from proxyfleet.provisioner_k8s.pure import egress, manifests, names
from proxyfleet.provisioner_k8s.pure.config import K8sSettings
from proxyfleet.provisioner_k8s.pure.manifests import ProxyObjects
from proxyfleet.provisioner_k8s.pure.pods import PodState, pod_state
from proxyfleet.provisioner_k8s.settings import Tuning
from proxyfleet.provisioner_k8s.sweeper import Sweeper

log = get_logger("proxyfleet.k8s")
SERVICE_POLL = 1.0
"""Seconds between two reads of a LoadBalancer Service waiting for its address."""
DEPENDENTS = ("secrets", "configmaps", "services")


class K8sProvider:
    """Each proxy is a pod running Squid, with a Secret, a ConfigMap and maybe a Service."""

    def __init__(
        self,
        settings: K8sSettings,
        installation_id: str,
        provider: str,
        *,
        clock: Clock | None = None,
        zones: Collection[str] = (),
        tuning: Tuning | None = None,
    ) -> None:
        """`zones`: the provider's zones (a create for another is refused; empty: any).
        Raises ConfigError when the client configuration cannot be loaded."""
        for what, value in (("installation id", installation_id), ("provider", provider)):
            try:
                names.check_label_value(what, value)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        self._s = settings
        self._t = tuning or Tuning()
        self._installation = installation_id
        self._provider = provider
        self._zones = frozenset(zones)
        self._clock = clock or SystemClock()
        self._ns = settings.namespace
        self._confs: dict[int, str] = {}
        """squid.conf by listening port (one port for all but in host_network mode)."""
        self.kube = Kube(load_configuration(settings), self._t.api_threads, self._t.request_timeout)
        self.objects = Objects(self.kube, self._ns, installation_id)
        self.selector = names.installation_selector(installation_id, provider)
        self.pods = PodWatch(
            self.kube, self._ns, self.selector, self._clock,
            watch_timeout=self._t.watch_timeout, relist_interval=self._t.relist_interval,
            request_timeout=self._t.request_timeout,
        )  # fmt: skip
        self.sweeper = Sweeper(self.objects, self.selector, self._t, self._clock)

    # ---- the Provider port ------------------------------------------------------------

    async def create(self, spec: ProxySpec) -> Provisioned:
        if self._zones and spec.zone not in self._zones:
            raise PermanentProviderError(f"zone {spec.zone!r} is not a zone of this provider")
        if spec.placement:
            raise PermanentProviderError(
                f"placement {sorted(spec.placement)}: the kubernetes provider takes no placement"
            )
        await self.pods.start(self._t.request_timeout)
        p = self._objects_of(spec)
        pod = await self.objects.create_or_adopt(
            "pods", manifests.pod_manifest(p, self._s), spec.proxy_id
        )
        state = pod_state(pod)
        if state.deleting:
            raise TemporaryProviderError(
                f"pod {self._ns}/{p.name} is still terminating (an earlier delete)", retry_after=2
            )
        service = await self._dependents(p, spec, state.uid)
        host, port = await self._address(p, state.uid, service)
        log.info("k8s.proxy_created", proxy_id=spec.proxy_id, host=host, port=port)
        return Provisioned(resource_id=names.resource_id(self._ns, spec.proxy_id), host=host,
                           port=port)  # fmt: skip

    async def delete(self, proxy_id: str, resource_id: str) -> None:
        if resource_id:
            try:
                namespace, _ = names.parse_resource_id(resource_id)
            except ValueError as exc:
                raise PermanentProviderError(str(exc)) from None
            if namespace != self._ns:
                raise PermanentProviderError(
                    f"resource {resource_id}: not in this provider's namespace {self._ns}"
                )
        name = names.object_name(proxy_id)
        # The pod first (Squid stops); its dependents go with it, and are deleted here too
        # so that nothing is left even where the owner reference did not hold.
        for resource in ("pods", *DEPENDENTS):
            found = await self.objects.get(resource, name)
            if found is None:
                continue
            labels = (found.get("metadata") or {}).get("labels")
            if not names.is_ours(labels, self._installation, proxy_id):
                log.warning("k8s.delete_refused_foreign", resource=resource, name=name)
                continue
            if await self.objects.delete(resource, name):
                log.info("k8s.object_deleted", resource=resource, name=name)

    async def list_managed(self) -> list[ManagedResource]:
        """This installation's and provider's live pods (terminating ones are going);
        GC asking is also when leftover Secrets, ConfigMaps and Services are swept."""
        pods = [pod_state(p) for p in await self.objects.list("pods", self.selector)]
        secrets = {
            s.get("metadata", {}).get("name", ""): manifests.decode_secret(s.get("data"))
            for s in await self.objects.list("secrets", self.selector)
        }
        live = [s for s in pods if s.proxy_id and not s.deleting]
        await self.sweeper.maybe_sweep()
        return [self._managed(s, secrets.get(s.name, {})) for s in live]

    async def close(self) -> None:
        """Stop the watch and the client's threads; the pods keep running."""
        await self.pods.close()
        self.kube.close()

    # ---- steps ------------------------------------------------------------------------

    def _objects_of(self, spec: ProxySpec) -> ProxyObjects:
        labels = names.labels(self._installation, self._provider, spec.proxy_id, self._s.labels)
        notes = names.proxy_annotations(
            spec.zone,
            self._clock.now(),
            egress.listen_port(self._s, spec.proxy_id),
            spec.labels,
            spec.placement,
        )
        return ProxyObjects(spec.proxy_id, self._ns, labels, notes, spec.zone)

    async def _dependents(self, p: ProxyObjects, spec: ProxySpec, uid: str) -> Json | None:
        """Secret, ConfigMap (and Service) owned by the pod `uid`; the Service returned."""
        htpasswd = await asyncio.to_thread(htpasswd_line, spec.username, spec.password)

        def same_credentials(found: Json) -> bool:
            got = manifests.decode_secret(found.get("data"))
            creds = (got.get(names.SECRET_USERNAME), got.get(names.SECRET_PASSWORD))
            return owned_by(found, uid) and creds == (spec.username, spec.password)

        secret = manifests.secret_manifest(p, uid, htpasswd, spec.username, spec.password)
        await self.objects.create_or_adopt("secrets", secret, spec.proxy_id, same_credentials)
        conf = manifests.configmap_manifest(p, uid, self._squid_conf(p.proxy_id))
        await self.objects.create_or_adopt(
            "configmaps", conf, spec.proxy_id, lambda found: owned_by(found, uid)
        )
        if self._s.expose == "pod_ip":
            return None
        return await self.objects.create_or_adopt(
            "services", manifests.service_manifest(p, uid, self._s), spec.proxy_id,
            lambda found: owned_by(found, uid),
        )  # fmt: skip

    async def _address(self, p: ProxyObjects, uid: str, service: Json | None) -> tuple[str, int]:
        """Wait on the watch for the pod's address (or the Service's)."""
        expose = self._s.expose
        timeout = self._t.address_timeout

        def current() -> PodState | None:
            state = self.pods.get(p.name)
            return state if state is not None and state.uid == uid else None

        def settled() -> bool:
            state = current()
            if self.pods.is_gone(uid) or (state is not None and state.failure):
                return True
            if expose == "load_balancer":
                return state is not None  # the address is the Service's
            wanted = state.host_ip if state is not None and expose == "node_port" else None
            return state is not None and bool(state.pod_ip) and (wanted is None or bool(wanted))

        if not await self.pods.wait(settled, timeout):
            state = await self._read_pod(p.name, uid)  # the watch may lag: ask once
        else:
            state = current()
        if self.pods.is_gone(uid) or state is None:
            raise TemporaryProviderError(f"pod {self._ns}/{p.name} was deleted while starting")
        if state.failure:
            raise PermanentProviderError(f"pod {self._ns}/{p.name}: {state.failure}")
        if expose == "pod_ip" and state.pod_ip:
            return state.pod_ip, egress.listen_port(self._s, p.proxy_id)
        if expose == "node_port" and state.host_ip and service is not None:
            return state.host_ip, _node_port(service)
        if expose == "load_balancer" and service is not None:
            return await self._ingress(p, uid, service)
        raise TemporaryProviderError(
            f"pod {self._ns}/{p.name}: no address after {timeout:g} s (phase {state.phase or '?'})"
        )

    def _squid_conf(self, proxy_id: str) -> str:
        port = egress.listen_port(self._s, proxy_id)
        if port not in self._confs:
            self._confs[port] = manifests.squid_conf(self._s, port)
        return self._confs[port]

    async def _read_pod(self, name: str, uid: str) -> PodState | None:
        found = await self.objects.get("pods", name)
        state = pod_state(found) if found is not None else None
        return state if state is not None and state.uid == uid else None

    async def _ingress(self, p: ProxyObjects, uid: str, service: Json) -> tuple[str, int]:
        """Poll the LoadBalancer Service until it has an ingress address (the pod failing
        for good meanwhile stops the wait)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._t.address_timeout
        while True:
            address = _ingress_address(service)
            if address:
                return address, self._s.proxy_port
            state = self.pods.get(p.name)
            if state is not None and state.uid == uid and state.failure:
                raise PermanentProviderError(f"pod {self._ns}/{p.name}: {state.failure}")
            if loop.time() >= deadline:
                raise TemporaryProviderError(
                    f"service {self._ns}/{p.name}: no load balancer address after"
                    f" {self._t.address_timeout:g} s"
                )
            await asyncio.sleep(SERVICE_POLL)
            found = await self.objects.get("services", p.name)
            if found is None:
                raise TemporaryProviderError(f"service {self._ns}/{p.name} disappeared")
            service = found

    def _managed(self, state: PodState, secret: dict[str, str]) -> ManagedResource:
        """A listed pod with what rebuilds its proxy after a store reset."""
        notes = state.annotations
        port = notes.get(names.ANNOTATION_PORT, "")
        host = state.pod_ip if self._s.expose == "pod_ip" else ""
        return ManagedResource(
            resource_id=names.resource_id(self._ns, state.proxy_id),
            proxy_id=state.proxy_id,
            installation_id=state.installation_id,
            created_at=state.created_at,
            zone=notes.get(names.ANNOTATION_ZONE, ""),
            host=host,
            port=int(port) if host and port.isdigit() else 0,
            username=secret.get(names.SECRET_USERNAME, ""),
            password=secret.get(names.SECRET_PASSWORD, ""),
            labels=names.string_map(notes.get(names.ANNOTATION_LABELS)),
            placement=names.string_map(notes.get(names.ANNOTATION_PLACEMENT)),
        )


def _node_port(service: Json) -> int:
    for port in (service.get("spec") or {}).get("ports") or []:
        if port.get("nodePort"):
            return int(port["nodePort"])
    raise TemporaryProviderError("service has no node port yet")


def _ingress_address(service: Json) -> str:
    ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    for entry in ingress:
        if entry.get("ip") or entry.get("hostname"):
            return str(entry.get("ip") or entry.get("hostname"))
    return ""
