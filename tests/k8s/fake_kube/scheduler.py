"""The fake's nodes and its scheduler: each new pod is bound to a node (spec.nodeName) as
kube-scheduler would, for the two rules proxy pods care about: a required pod
anti-affinity over kubernetes.io/hostname (the incoming pod's terms and those of the pods
already on the node) and host ports (a hostNetwork pod's ports are its node's). The node
with the fewest pods wins. A pod no node takes stays Pending with PodScheduled False
(Unschedulable), and is bound when a pod goes away and makes room. Node selectors,
resources and taints are not modelled. (I/O: a thread.)"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass

from .events import Event
from .objects import Json
from .selectors import LabelSelector, Requirement, label_matches
from .store import Store

log = logging.getLogger(__name__)

HOSTNAME = "kubernetes.io/hostname"
_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


@dataclass(frozen=True)
class FakeNode:
    name: str
    address: str
    """The node's own loopback address: where its hostNetwork pods listen, and where every
    pod on it sends its traffic to 127/8 from (a node's SNAT address)."""


class Scheduler:
    def __init__(self, store: Store, nodes: list[FakeNode]) -> None:
        self.store = store
        self.nodes = nodes
        self._events: queue.Queue[Event | None] = queue.Queue()
        self._thread = threading.Thread(target=self._retry, name="fakekube-scheduler", daemon=True)
        store.on_create.append(self._on_create)
        store.listeners.append(self._on_event)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._events.put(None)
        self._thread.join(5)

    def node(self, name: str) -> FakeNode:
        for n in self.nodes:
            if n.name == name:
                return n
        raise LookupError(f"no fake node {name!r}")

    # ---- binding --------------------------------------------------------------------------

    def _on_create(self, resource: str, pod: Json) -> None:
        """Under the store's lock: bind the new pod, or mark it Unschedulable."""
        if resource != "pods" or pod["spec"].get("nodeName"):
            return
        chosen, why = self._choose(pod)
        if chosen is not None:
            pod["spec"]["nodeName"] = chosen
        else:
            pod["status"]["conditions"] = [_unschedulable(len(self.nodes), why)]

    def _choose(self, pod: Json) -> tuple[str | None, str]:
        if len(self.nodes) == 1 and not _constrained(pod) and not self._any_constrained():
            return self.nodes[0].name, ""
        placed = self.store.list_objects("pods", None, _occupies)[0]
        by_node: dict[str, list[Json]] = {n.name: [] for n in self.nodes}
        for other in placed:
            if other["metadata"]["uid"] != pod["metadata"]["uid"]:
                by_node.setdefault(other["spec"]["nodeName"], []).append(other)
        reasons: set[str] = set()
        fits = []
        for node in self.nodes:
            if why := _conflict(pod, by_node[node.name]):
                reasons.add(why)
            else:
                fits.append(node.name)
        if not fits:
            return None, "; ".join(sorted(reasons))
        return min(fits, key=lambda name: len(by_node[name])), ""

    def _any_constrained(self) -> bool:
        return bool(self.store.list_objects("pods", None, _constrained)[0])

    # ---- binding later, when room is made -------------------------------------------------

    def _on_event(self, event: Event) -> None:
        if event.resource == "pods" and event.type == "DELETED":
            self._events.put(event)

    def _retry(self) -> None:
        while self._events.get() is not None:
            try:
                self._bind_pending()
            except Exception:
                log.exception("fake scheduler: binding pending pods failed")

    def _bind_pending(self) -> None:
        pending = self.store.list_objects(
            "pods", None, lambda p: not p["spec"].get("nodeName") and _alive(p)
        )[0]
        for pod in pending:
            meta = pod["metadata"]

            def bind(current: Json, uid: str = meta["uid"]) -> None:
                if current["metadata"]["uid"] != uid or current["spec"].get("nodeName"):
                    return
                chosen, _ = self._choose(current)
                if chosen is not None:
                    current["spec"]["nodeName"] = chosen
                    current["status"]["conditions"] = [_scheduled()]

            with self.store.lock:  # choose and bind at once, as a create does
                self.store.mutate("pods", meta["namespace"], meta["name"], bind)


def _conflict(pod: Json, on_node: list[Json]) -> str:
    """Why `pod` cannot join the pods already on a node ("" when it can)."""
    for other in on_node:
        if _repels(pod, other) or _repels(other, pod):
            return "node(s) didn't match pod anti-affinity rules"
        if _host_ports(pod) & _host_ports(other):
            return "node(s) didn't have free ports for the requested pod ports"
    return ""


def _repels(owner: Json, other: Json) -> bool:
    """`owner`'s required anti-affinity terms (over hostname) select `other`."""
    namespace = owner["metadata"].get("namespace")
    for term in _anti_affinity(owner):
        if term.get("topologyKey") != HOSTNAME:
            continue
        namespaces = term.get("namespaces") or [namespace]
        if other["metadata"].get("namespace") not in namespaces:
            continue
        selector = _selector(term.get("labelSelector") or {})
        if selector and label_matches(selector, other["metadata"].get("labels")):
            return True
    return False


def _anti_affinity(pod: Json) -> list[Json]:
    anti = ((pod["spec"].get("affinity") or {}).get("podAntiAffinity")) or {}
    return list(anti.get("requiredDuringSchedulingIgnoredDuringExecution") or [])


def _host_ports(pod: Json) -> set[tuple[int, str]]:
    host_network = bool(pod["spec"].get("hostNetwork"))
    out = set()
    for c in pod["spec"].get("containers") or []:
        for p in c.get("ports") or []:
            port = p.get("hostPort") or (p.get("containerPort") if host_network else None)
            if port:
                out.add((int(port), str(p.get("protocol", "TCP"))))
    return out


def _selector(struct: Json) -> LabelSelector:
    """A metav1.LabelSelector (matchLabels, matchExpressions) as requirements."""
    out = [Requirement(k, "=", (str(v),)) for k, v in (struct.get("matchLabels") or {}).items()]
    for e in struct.get("matchExpressions") or []:
        op = _OPERATORS[e["operator"]]
        out.append(Requirement(str(e["key"]), op, tuple(str(v) for v in e.get("values") or ())))
    return out


def _constrained(pod: Json) -> bool:
    return bool(_anti_affinity(pod) or _host_ports(pod))


def _alive(pod: Json) -> bool:
    return "deletionTimestamp" not in pod["metadata"] and pod.get("status", {}).get(
        "phase"
    ) not in (
        "Succeeded",
        "Failed",
    )


def _occupies(pod: Json) -> bool:
    """On a node and not finished (a terminating pod still holds its place)."""
    return bool(pod["spec"].get("nodeName")) and pod.get("status", {}).get("phase") not in (
        "Succeeded",
        "Failed",
    )


def _scheduled() -> Json:
    return {"type": "PodScheduled", "status": "True", "lastProbeTime": None}


def _unschedulable(nodes: int, why: str) -> Json:
    return {
        "type": "PodScheduled",
        "status": "False",
        "lastProbeTime": None,
        "reason": "Unschedulable",
        "message": f"0/{nodes} nodes are available: {nodes} {why}.",
    }
