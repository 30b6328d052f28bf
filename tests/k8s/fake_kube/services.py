"""Services: a ClusterIP on create (an address of the fake's own loopback /16 on which
nothing listens), for NodePort and LoadBalancer a nodePort listening on 127.0.0.1 (the
node's hostIP), and for LoadBalancer a loopback ingress IP in status.loadBalancer; both
forward TCP to a Ready pod the selector picks. (I/O: sockets, threads.)"""

from __future__ import annotations

import contextlib
import itertools
import logging
import queue
import random
import select
import socket
import struct
import threading
from dataclasses import dataclass, field

from tests.loopback_squid.host import LoopbackAddresses, NoAddressLeft

from .errors import Cause, invalid
from .events import Event
from .objects import Json
from .selectors import label_matches, selector_from_map
from .store import Store

log = logging.getLogger(__name__)

NODE_PORTS = range(30000, 32768)


@dataclass
class Exposed:
    listeners: list[socket.socket] = field(default_factory=list)
    ingress_ip: str | None = None


class ServiceController:
    def __init__(self, store: Store, addresses: LoopbackAddresses) -> None:
        self.store = store
        self.addresses = addresses
        self._cluster_ips = itertools.count(1)
        self._lock = threading.Lock()
        self._exposed: dict[str, Exposed] = {}
        self._pending_listeners: dict[str, list[socket.socket]] = {}
        self._events: queue.Queue[Event | None] = queue.Queue()
        self._closed = threading.Event()
        self._thread = threading.Thread(
            target=self._dispatch, name="fakekube-services", daemon=True
        )
        store.on_create.append(self._allocate)
        store.listeners.append(self._on_event)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._closed.set()
        self._events.put(None)
        self._thread.join(5)
        with self._lock:
            exposed = list(self._exposed.values())
            self._exposed.clear()
            pending = [s for socks in self._pending_listeners.values() for s in socks]
            self._pending_listeners.clear()
        for e in exposed:
            self._unexpose(e)
        for s in pending:
            s.close()

    # ---- on create (under the store's lock) ------------------------------------------------

    def _allocate(self, resource: str, obj: Json) -> None:
        if resource != "services":
            return
        spec = obj["spec"]
        n = next(self._cluster_ips)
        ip = f"{self.addresses.reserved_prefix}{n % 254 + 1}"
        spec.setdefault("clusterIP", ip)
        spec.setdefault("clusterIPs", [spec["clusterIP"]])
        if spec.get("type") not in ("NodePort", "LoadBalancer"):
            return
        sockets: list[socket.socket] = []
        for i, port in enumerate(spec.get("ports") or []):
            try:
                sock, number = _bind_node_port(port.get("nodePort"))
            except OSError:
                for s in sockets:
                    s.close()
                raise invalid(
                    "Service",
                    obj["metadata"]["name"],
                    [
                        Cause(
                            f"spec.ports[{i}].nodePort",
                            "FieldValueInvalid",
                            f"Invalid value: {port.get('nodePort')}: provided port is already "
                            "allocated",
                        )
                    ],
                ) from None
            port["nodePort"] = number
            sockets.append(sock)
        with self._lock:
            self._pending_listeners[obj["metadata"]["uid"]] = sockets

    # ---- after ----------------------------------------------------------------------------

    def _on_event(self, event: Event) -> None:
        if event.resource == "services" and event.type in ("ADDED", "DELETED"):
            self._events.put(event)

    def _dispatch(self) -> None:
        while (event := self._events.get()) is not None:
            try:
                if event.type == "ADDED":
                    self._expose(event.obj)
                else:
                    with self._lock:
                        gone = self._exposed.pop(event.obj["metadata"]["uid"], None)
                        pending = self._pending_listeners.pop(event.obj["metadata"]["uid"], [])
                    for s in pending:
                        s.close()
                    if gone is not None:
                        self._unexpose(gone)
            except Exception:
                log.exception("fake kube: service %s failed", event.type)

    def _expose(self, service: Json) -> None:
        meta, spec = service["metadata"], service["spec"]
        uid = meta["uid"]
        with self._lock:
            sockets = self._pending_listeners.pop(uid, [])
        exposed = Exposed(listeners=list(sockets))
        ports = spec.get("ports") or []
        for sock, port in zip(sockets, ports, strict=False):
            self._serve(sock, meta["namespace"], spec, port)
        if spec.get("type") == "LoadBalancer" and ports:
            try:
                ip = self.addresses.allocate(int(ports[0]["port"]))
            except NoAddressLeft:
                log.warning("fake kube: no loopback address left for a load balancer")
                ip = None
            if ip is not None:
                exposed.ingress_ip = ip
                for port in ports:
                    sock = socket.socket()
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    sock.bind((ip, int(port["port"])))
                    sock.listen(128)
                    exposed.listeners.append(sock)
                    self._serve(sock, meta["namespace"], spec, port)

                def ingress(obj: Json) -> None:
                    if obj["metadata"]["uid"] == uid:
                        obj.setdefault("status", {})["loadBalancer"] = {
                            "ingress": [{"ip": ip, "ipMode": "VIP"}]
                        }

                self.store.mutate("services", meta["namespace"], meta["name"], ingress)
        with self._lock:
            if self._closed.is_set():
                self._unexpose(exposed)
                return
            self._exposed[uid] = exposed

    def _unexpose(self, exposed: Exposed) -> None:
        for sock in exposed.listeners:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        if exposed.ingress_ip is not None:
            self.addresses.release(exposed.ingress_ip)

    def _serve(self, sock: socket.socket, namespace: str, spec: Json, port: Json) -> None:
        threading.Thread(
            target=self._accept,
            args=(sock, namespace, spec, port),
            daemon=True,
            name="fakekube-svc",
        ).start()

    def _accept(self, sock: socket.socket, namespace: str, spec: Json, port: Json) -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return  # closed
            backend = self._backend(namespace, spec, port)
            if backend is None:
                # No ready endpoint: reset at once, the nearest to kube-proxy's reject rule.
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.close()
                continue
            threading.Thread(
                target=_pipe, args=(conn, backend), daemon=True, name="fakekube-fwd"
            ).start()

    def _backend(self, namespace: str, spec: Json, port: Json) -> tuple[str, int] | None:
        selector = selector_from_map(spec.get("selector") or {})
        if not selector:
            return None
        pods = self.store.list_objects(
            "pods", namespace, lambda p: label_matches(selector, p["metadata"].get("labels"))
        )[0]
        ready = [
            p
            for p in pods
            if p["status"].get("podIP")
            and "deletionTimestamp" not in p["metadata"]
            and any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in p["status"].get("conditions") or []
            )
        ]
        if not ready:
            return None
        pod = random.choice(ready)
        return pod["status"]["podIP"], _target_port(pod, port)


def _target_port(pod: Json, port: Json) -> int:
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int) or (isinstance(target, str) and target.isdigit()):
        return int(target)
    for c in pod["spec"].get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("name") == target:
                return int(p["containerPort"])
    return int(port["port"])


def _bind_node_port(wanted: int | None) -> tuple[socket.socket, int]:
    candidates = [wanted] if wanted else random.sample(NODE_PORTS, 200)
    for number in candidates:
        sock = socket.socket()
        try:
            sock.bind(("127.0.0.1", int(number)))
        except OSError:
            sock.close()
            continue
        sock.listen(128)
        return sock, int(number)
    raise OSError("no free node port")


def _pipe(client: socket.socket, backend: tuple[str, int]) -> None:
    try:
        upstream = socket.create_connection(backend, timeout=5)
    except OSError:
        client.close()
        return
    upstream.settimeout(None)
    pair = {client: upstream, upstream: client}
    try:
        while pair:
            readable, _, _ = select.select(list(pair), [], [], 30)
            if not readable:
                break
            for s in readable:
                data = s.recv(65536)
                if not data:
                    with contextlib.suppress(OSError):
                        pair[s].shutdown(socket.SHUT_WR)
                    pair.pop(s, None)
                    continue
                pair[s].sendall(data)
    except OSError:
        pass
    finally:
        client.close()
        upstream.close()
