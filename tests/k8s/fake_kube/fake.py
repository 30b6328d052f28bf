"""The fake's facade: the API server, its store, the kubelet and the controllers, started
and stopped together."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import yaml
from kubernetes import client
from tests.loopback_squid.host import LoopbackAddresses

from .crds import CrdController
from .faults import RBAC_VERBS, Call, Fault, Faults
from .gc import GarbageCollector
from .kubelet import Kubelet
from .objects import NODE_NAME, Json
from .scheduler import FakeNode, Scheduler
from .server import KubeServer
from .services import ServiceController
from .store import Store


class FakeKube:
    def __init__(self, now: Callable[[], float] = time.time, nodes: int = 1) -> None:
        """`now`: the clock of creationTimestamp and deletionTimestamp, e.g. a
        proxyfleet.common.core.clock.ManualClock's `now` (the kubelet's status times are real
        time). `nodes`: how many nodes (fake-node, fake-node-2, ...), each with a loopback
        address of its own (`node_address`)."""
        self.store = Store(now)
        self.crds = CrdController(self.store)
        self.faults = Faults()
        self.addresses = LoopbackAddresses()
        self.nodes = [
            FakeNode(NODE_NAME if i == 0 else f"{NODE_NAME}-{i + 1}", self.addresses.allocate(0))
            for i in range(nodes)
        ]
        self.scheduler = Scheduler(self.store, self.nodes)
        self.server = KubeServer(self.store, self.faults)
        self.kubelet = Kubelet(self.store, self.addresses, self.scheduler)
        self.server.logs = self.kubelet.logs
        self.services = ServiceController(self.store, self.addresses)
        self.gc = GarbageCollector(self.store)
        self._started = False

    def start(self) -> FakeKube:
        self.scheduler.start()
        self.kubelet.start()
        self.services.start()
        self.gc.start()
        self.server.start()
        self._started = True
        return self

    def close(self) -> None:
        """Stop serving, end every watch, stop every Squid and forwarder it started."""
        if self._started:
            self.server.stop()
        self.gc.close()
        self.services.close()
        self.kubelet.close()
        self.scheduler.close()

    # ---- clients --------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self.server.url

    def configuration(self) -> client.Configuration:
        config = client.Configuration(host=self.url)
        if self.server.token is not None:
            config.api_key = {"authorization": f"Bearer {self.server.token}"}
        return config

    def write_kubeconfig(
        self, path: Path | str, namespace: str = "proxies", token: str | None = None
    ) -> Path:
        """A kubeconfig for this fake (context `fake`); with `token`, the fake then requires
        it (401 otherwise)."""
        if token is not None:
            self.server.token = token
        user: Json = {"token": token} if token is not None else {}
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": user}],
            "contexts": [
                {
                    "name": "fake",
                    "context": {"cluster": "fake", "user": "fake", "namespace": namespace},
                }
            ],
            "current-context": "fake",
            "preferences": {},
        }
        out = Path(path)
        out.write_text(yaml.safe_dump(doc))
        return out

    # ---- what happened --------------------------------------------------------------------

    @property
    def calls(self) -> list[Call]:
        return self.faults.snapshot()

    def verbs(self) -> set[tuple[str, str]]:
        """(RBAC verb, resource) of every resource call so far, whatever it answered."""
        return {(c.verb, c.resource) for c in self.calls if c.resource and c.verb in RBAC_VERBS}

    def rbac_calls(self) -> set[tuple[str, str, str]]:
        """(API group, RBAC verb, resource) of every resource call so far."""
        return {
            (c.group, c.verb, c.resource) for c in self.calls if c.resource and c.verb in RBAC_VERBS
        }

    def objects(self, resource: str, namespace: str | None = None) -> list[Json]:
        """Current objects (terminating ones too) as the API would return them; a custom
        resource by its plural.group (`proxypools.proxyfleet.io`)."""
        return self.store.list_objects(resource, namespace)[0]

    def pod_address(self, namespace: str, name: str) -> str:
        return self.kubelet.pod_address(namespace, name)

    def node_address(self, name: str) -> str:
        """The node's own address: its hostNetwork pods', and every pod's on it as seen by
        a loopback target (the node's SNAT address)."""
        return self.scheduler.node(name).address

    # ---- faults ---------------------------------------------------------------------------

    def inject(
        self,
        status: int,
        *,
        verb: str | None = None,
        resource: str | None = None,
        times: int = 1,
        retry_after: int | None = None,
        reason: str | None = None,
        message: str | None = None,
    ) -> None:
        """The next `times` matching requests answer that Status instead (429 carries
        Retry-After: `retry_after`, 1 by default)."""
        self.faults.add(
            Fault(
                "status",
                verb,
                resource,
                times,
                status=status,
                retry_after=retry_after,
                reason=reason,
                message=message,
            )
        )

    def inject_delay(
        self,
        seconds: float,
        *,
        verb: str | None = None,
        resource: str | None = None,
        times: int = 1,
    ) -> None:
        """The next `times` matching requests are answered `seconds` late (a client's
        `_request_timeout` then fires first)."""
        self.faults.add(Fault("delay", verb, resource, times, seconds=seconds))

    def inject_disconnect(
        self,
        *,
        verb: str | None = None,
        resource: str | None = None,
        times: int = 1,
        after: bool = False,
    ) -> None:
        """The next `times` matching requests get their connection closed unanswered:
        before anything happened, or with `after` once the call was carried out (a create
        that landed though the client saw an error). Recorded with code 0."""
        self.faults.add(Fault("disconnect", verb, resource, times, after=after))

    def quota(self, namespace: str, pods: int | None) -> None:
        """Pod creates beyond `pods` non-terminated pods answer 403 "exceeded quota: ..."
        (None lifts it)."""
        self.faults.set_quota(namespace, pods)

    def drop_watches(self) -> int:
        """End every open watch stream now, abruptly (the client sees a broken chunked
        response); the number ended."""
        return self.store.drop_watches()

    def compact(self) -> None:
        """Forget the event history: watches from an older resourceVersion get 410 Gone."""
        self.store.compact()
