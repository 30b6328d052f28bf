"""The pool operator's tests' tools: the real `proxyfleet-pool-operator` run as a process
(against the fake API server, or a real cluster), ProxyPools written and read through the
real client, and waits bounded in time. Shared with the opt-in real-cluster test."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from proxyfleet.devstack.servers import free_port
from proxyfleet.pool_operator import crd

T = TypeVar("T")
SCRIPT = str(Path(sys.executable).parent / "proxyfleet-pool-operator")
PROVIDERS_YAML = """
providers:
  - name: local
    type: local
    zones: [local-a, local-b]
    max_proxies: 20
    local: {}
"""
"""The providers config the operator checks specs against (it runs no provisioner)."""
FAST = ("--status-interval", "0.3", "--delete-poll", "0.1", "--delete-wait", "1", "--crd-poll",
        "0.2")  # fmt: skip
"""Settings that keep each test's waits short."""


async def eventually(
    what: str, probe: Callable[[], Awaitable[T | None]], within: float = 15.0
) -> T:
    """Poll `probe` until it returns something truthy (bounded in time)."""
    deadline = time.monotonic() + within
    while True:
        got = await probe()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within:g} s: {what} (last: {got!r})")
        await asyncio.sleep(0.05)


@dataclass
class OperatorProcess:
    """A running proxyfleet-pool-operator, its JSON log in a file."""

    proc: subprocess.Popen[bytes]
    log_path: Path
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def lines(self) -> list[dict[str, Any]]:
        text = self.log_path.read_text(errors="replace")
        return [json.loads(line) for line in text.splitlines() if line.startswith("{")]

    def events(self, name: str) -> list[dict[str, Any]]:
        return [line for line in self.lines() if line.get("event") == name]

    async def readyz(self) -> tuple[int, str]:
        try:
            async with httpx.AsyncClient(timeout=2) as http:
                r = await http.get(f"{self.url}/readyz")
                return r.status_code, r.text
        except httpx.TransportError as exc:
            return 0, str(exc)

    async def wait_ready(self, within: float = 30.0) -> None:
        async def ready() -> bool:
            assert self.proc.poll() is None, self.log_path.read_text()
            return (await self.readyz())[0] == 200

        await eventually("the operator ready", ready, within)

    def stop(self, timeout: float = 15.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"no stop on SIGTERM:\n{self.log_tail()}") from None

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


@dataclass
class OperatorFactory:
    """Starts operators on one kubeconfig, Redis and providers config; stops them all."""

    kubeconfig: Path
    redis_url: str
    workdir: Path
    started: list[OperatorProcess] = field(default_factory=list)

    def start(self, *args: str, env: dict[str, str] | None = None) -> OperatorProcess:
        providers = self.workdir / "providers.yaml"
        if not providers.exists():
            providers.write_text(PROVIDERS_YAML)
        n = len(self.started)
        log_path = self.workdir / f"operator-{n}.log"
        port = free_port()
        command = [
            SCRIPT, "--kubeconfig", str(self.kubeconfig), "--redis-url", self.redis_url,
            "--providers-config", str(providers), "--metrics-port", str(port),
            "--log-format", "json", *FAST, *args,
        ]  # fmt: skip
        with log_path.open("wb") as out:
            proc = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
            )
        made = OperatorProcess(proc, log_path, port)
        self.started.append(made)
        return made

    def stop_all(self) -> None:
        for op in self.started:
            if op.proc.poll() is None:
                op.proc.kill()
                op.proc.wait()


class Pools:
    """ProxyPools of one namespace through the real client (CustomObjectsApi)."""

    def __init__(self, api_client: client.ApiClient, namespace: str) -> None:
        self.api: Any = client.CustomObjectsApi(api_client)
        self.namespace = namespace

    def _args(self) -> tuple[str, str, str, str]:
        return crd.GROUP, crd.VERSION, self.namespace, crd.PLURAL

    def apply(
        self, name: str, spec: dict[str, Any], annotations: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """Create the resource, or replace its spec."""
        body: dict[str, Any] = {
            "apiVersion": crd.API_VERSION,
            "kind": crd.KIND,
            "metadata": {"name": name, "annotations": annotations or {}},
            "spec": spec,
        }
        try:
            made: dict[str, Any] = self.api.create_namespaced_custom_object(*self._args(), body)
            return made
        except ApiException as exc:
            if exc.status != 409:
                raise
        patched: dict[str, Any] = self.api.patch_namespaced_custom_object(
            *self._args(), name, [{"op": "replace", "path": "/spec", "value": spec}],
            _content_type="application/json-patch+json",
        )  # fmt: skip
        return patched

    def get(self, name: str) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = self.api.get_namespaced_custom_object(*self._args(), name)
            return found
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def status(self, name: str) -> dict[str, Any]:
        found = self.get(name) or {}
        status: dict[str, Any] = found.get("status") or {}
        return status

    def condition(self, name: str, kind: str = "Ready") -> dict[str, Any] | None:
        for c in self.status(name).get("conditions") or []:
            if c.get("type") == kind:
                found: dict[str, Any] = c
                return found
        return None

    def scale(self, name: str, replicas: int) -> dict[str, Any]:
        scale: dict[str, Any] = self.api.patch_namespaced_custom_object_scale(
            *self._args(), name, {"spec": {"replicas": replicas}}
        )
        return scale

    def get_scale(self, name: str) -> dict[str, Any]:
        scale: dict[str, Any] = self.api.get_namespaced_custom_object_scale(*self._args(), name)
        return scale

    def delete(self, name: str) -> None:
        self.api.delete_namespaced_custom_object(*self._args(), name)

    def events(self) -> list[tuple[str, str, str]]:
        """(type, reason, involved object's name) of the namespace's Events."""
        core: Any = client.CoreV1Api(self.api.api_client)
        return [
            (e.type, e.reason, e.involved_object.name)
            for e in core.list_namespaced_event(self.namespace).items
        ]
