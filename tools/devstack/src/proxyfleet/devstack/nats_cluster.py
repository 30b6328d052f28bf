"""Three NATS servers on free loopback ports, routed into one JetStream cluster: what the
tests of replicated streams run against (deploy/kubernetes/ha runs the same in a cluster).

Each node keeps its ports and store folder for the life of the cluster, so a node that was
stopped or killed comes back where the others and the clients look for it, with the
JetStream data it had."""

from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proxyfleet.devstack.servers import free_port, nats_server_binary, wait_tcp

CLUSTER_NAME = "proxyfleet"
FORMED_WITHIN = 30.0
"""Seconds for the routes to connect and JetStream to elect its meta leader (a few on an
idle machine; the first election waits for every peer's vote)."""


@dataclass
class NatsNode:
    """One server of the cluster: `stop`, `kill` and `start` keep its ports and store."""

    name: str
    """Its server name (what JetStream names a stream's leader and replicas by)."""
    client_port: int
    route_port: int
    monitor_port: int
    store: Path
    routes: str
    log: Path
    _process: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.client_port}"

    @property
    def process(self) -> subprocess.Popen[bytes]:
        """The server's latest process (a stopped or killed one until `start`)."""
        if self._process is None:
            raise RuntimeError(f"NATS server {self.name} was never started")
        return self._process

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Start the server (after a stop or kill: same ports, same store)."""
        if self.running:
            return
        self.store.mkdir(parents=True, exist_ok=True)
        argv = [
            nats_server_binary(),
            "-a", "127.0.0.1",
            "-p", str(self.client_port),
            "-m", str(self.monitor_port),
            "-js",
            "-sd", str(self.store),
            "--server_name", self.name,
            "--cluster_name", CLUSTER_NAME,
            "--cluster", f"nats://127.0.0.1:{self.route_port}",
            "--routes", self.routes,
        ]  # fmt: skip
        out = open(self.log, "ab")  # noqa: SIM115  (the child keeps it)
        self._process = subprocess.Popen(
            argv, stdout=out, stderr=out, start_new_session=True, cwd=self.store
        )
        out.close()
        wait_tcp("127.0.0.1", self.client_port, timeout=20)

    def stop(self) -> None:
        """SIGTERM (a clean shutdown: JetStream hands its leaderships over first)."""
        self._end(signal.SIGTERM)

    def kill(self) -> None:
        """kill -9: no goodbye, whatever it led is elected anew by the others."""
        self._end(signal.SIGKILL)

    def _end(self, sig: int) -> None:
        if not self.running:
            return
        self.process.send_signal(sig)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)

    def monitor(self, endpoint: str) -> dict[str, Any]:
        """One monitoring endpoint's JSON (`jsz`, `routez`, `healthz`); {} when the server
        does not answer or answers an error (503 while JetStream is not current)."""
        url = f"http://127.0.0.1:{self.monitor_port}/{endpoint}"
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                data: dict[str, Any] = json.loads(reply.read())
                return data
        except (OSError, ValueError):  # refused, timed out, an HTTP error, no JSON
            return {}


@dataclass
class NatsCluster:
    nodes: list[NatsNode]

    @property
    def servers(self) -> list[NatsNode]:
        """The nodes (each has the `url`, `process` and `stop()` a single Server has)."""
        return self.nodes

    @property
    def url(self) -> str:
        """Every server's URL, comma-separated (the form the nats_url setting takes)."""
        return ",".join(n.url for n in self.nodes)

    def node(self, name: str) -> NatsNode:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def meta_leader(self) -> str:
        """The JetStream meta leader every running node agrees on, with all of them
        routed to each other and JetStream current on each; "" while that is not so."""
        running = [n for n in self.nodes if n.running]
        leaders = set()
        for n in running:
            if n.monitor("healthz").get("status") != "ok":
                return ""
            if n.monitor("routez").get("num_routes", 0) < len(running) - 1:
                return ""
            leaders.add(n.monitor("jsz").get("meta_cluster", {}).get("leader", ""))
        return leaders.pop() if len(leaders) == 1 else ""

    def wait_formed(self, within: float = FORMED_WITHIN) -> str:
        """Block until `meta_leader()` names one; returns it."""
        deadline = time.monotonic() + within
        while not (leader := self.meta_leader()):
            if time.monotonic() > deadline:
                states = {n.name: n.monitor("jsz").get("meta_cluster") for n in self.nodes}
                msg = f"the NATS cluster did not elect a meta leader in {within}s: {states}"
                raise TimeoutError(msg)
            time.sleep(0.1)  # a poll of the monitoring endpoints: no event to await
        return leader

    def stop(self) -> None:
        for n in self.nodes:
            n.stop()


def start_nats_cluster(data_dir: Path, size: int = 3, *, formed: bool = True) -> NatsCluster:
    """`size` servers with routes to each other, each with its store in `data_dir/<name>`
    and its log at `data_dir/<name>.log`. `formed`: return once JetStream has a meta
    leader (else at once: a stream declared before it is refused, which the services'
    start tries again)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    ports = _distinct_ports(3 * size)
    route_ports, client_ports, monitor_ports = (
        ports[:size],
        ports[size : 2 * size],
        ports[2 * size :],
    )
    routes = ",".join(f"nats://127.0.0.1:{p}" for p in route_ports)
    cluster = NatsCluster(
        [
            NatsNode(
                name=f"n{i}",
                client_port=client_ports[i],
                route_port=route,
                monitor_port=monitor_ports[i],
                store=data_dir / f"n{i}",
                routes=routes,
                log=data_dir / f"n{i}.log",
            )
            for i, route in enumerate(route_ports)
        ]
    )
    try:
        for n in cluster.nodes:
            n.start()
        if formed:
            cluster.wait_formed()
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _distinct_ports(count: int) -> list[int]:
    """`count` free ports, no two alike (free_port alone may give one twice: nothing
    binds them until the servers start)."""
    ports: list[int] = []
    for _ in range(count * 20):
        if len(ports) == count:
            break
        port = free_port()
        if port not in ports:
            ports.append(port)
    if len(ports) < count:
        raise RuntimeError(f"no {count} distinct free ports")
    return ports
