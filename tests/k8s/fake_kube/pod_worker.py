"""One pod on the fake node: a thread that pulls (or fails to), mounts, starts, probes,
restarts and stops it, and writes what happened into the pod's status."""

from __future__ import annotations

import contextlib
import logging
import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tests.loopback_squid.conf import SquidConfError, first_http_port
from tests.loopback_squid.host import (
    NoAddressLeft,
    accepts,
    kill,
    start_squid,
    tail,
)

from . import pod_dir, pod_failures, pod_files
from .modes import PodMode
from .objects import Json
from .pod_status import (
    PodView,
    crash_loop_backoff,
    evicted_message,
    render,
    running,
    terminated,
    waiting,
)

if TYPE_CHECKING:
    from .kubelet import Kubelet

log = logging.getLogger(__name__)


class Stopped(Exception):
    """The pod is being deleted (or the fake closed): leave at once."""


class PodWorker(threading.Thread):
    def __init__(self, kubelet: Kubelet, pod: Json, forget: Callable[[str], None]) -> None:
        meta = pod["metadata"]
        super().__init__(name=f"fakekube-pod-{meta['name']}", daemon=True)
        self.kubelet = kubelet
        self.pod = pod
        self.namespace, self.name, self.uid = meta["namespace"], meta["name"], meta["uid"]
        self.node = kubelet.scheduler.node(pod["spec"]["nodeName"])
        self.host_network = bool(pod["spec"].get("hostNetwork"))
        """On its node's network: the node's address is the pod's (never released)."""
        self.view = PodView()
        self.address: str | None = None
        self.directory: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self._forget = forget
        self._stopping = threading.Event()
        self._commands: queue.Queue[str] = queue.Queue()
        self._wake = threading.Event()

    # ---- from other threads ---------------------------------------------------------------

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()

    def command(self, what: str) -> None:
        self._commands.put(what)
        self._wake.set()

    def log(self) -> str | None:
        """What the container wrote (a simulated one: a line saying how it ended)."""
        if self.directory is not None:
            parts = []
            for name in ("cache.log", "squid.out"):
                with contextlib.suppress(OSError):
                    parts.append((self.directory / name).read_text(errors="replace"))
            return "".join(parts)
        terminated_ = self.view.last_state.get("terminated") or self.view.state.get("terminated")
        if terminated_:
            return f"fake kubelet: the container exited with {terminated_['exitCode']}\n"
        return None

    def pid(self) -> int | None:
        proc = self.proc
        return proc.pid if proc is not None and proc.poll() is None else None

    # ---- the pod's life -------------------------------------------------------------------

    def run(self) -> None:
        try:
            self._live()
        except Stopped:
            pass
        except Exception:
            log.exception("fake kubelet: pod %s/%s failed", self.namespace, self.name)
        finally:
            kill(self.proc)
            if self.address is not None and not self.host_network:
                self.kubelet.addresses.release(self.address)
            if self.directory is not None:
                shutil.rmtree(self.directory, ignore_errors=True)
            self.kubelet.store.release_pod(self.namespace, self.name, self.uid)
            self._forget(self.uid)

    def _live(self) -> None:
        self.sleep(self.kubelet.start_delay)
        mode = self.kubelet.mode_for(self.pod)
        found = pod_files.squid_container(self.pod)
        container = found[1] if found else self.pod["spec"]["containers"][0]
        if mode in (PodMode.ERR_IMAGE_PULL, PodMode.IMAGE_PULL_BACKOFF):
            self._allocate(3128)
            pod_failures.pull_failure(self, container, backoff=mode is PodMode.IMAGE_PULL_BACKOFF)
        files = self._wait_for_volumes()
        if mode in (PodMode.CRASH_LOOP, PodMode.OOM_KILLED):
            self._allocate(3128)
            pod_failures.simulated_crash_loop(self, oom=mode is PodMode.OOM_KILLED)
        if found is None or self.kubelet.squid is None:
            self._allocate(pod_files.probe_port(container, 3128))
            self._run_without_process(container, found is not None)
        assert found is not None
        argv, port = self._prepare(found[1], found[2], files)
        self._run_squid(found[1], argv, port)

    # ---- steps ----------------------------------------------------------------------------

    def _wait_for_volumes(self) -> pod_files.PodFiles:
        reported = ""
        while True:
            try:
                return pod_files.volume_files(self.pod, self._lookup)
            except pod_files.MissingVolume as exc:
                if str(exc) != reported:
                    reported = str(exc)
                    self.view.state = waiting("ContainerCreating")
                    self.view.message = ""
                    self.push()
                self.sleep(0.05)

    def _run_without_process(self, container: Json, wanted_squid: bool) -> None:
        """No Squid to run (another command, or none installed): Running; Ready when
        nothing probes it; with a Squid command and no squid here, say so."""
        if wanted_squid:
            self.view.state = waiting(
                "CreateContainerError", "squid is not installed on the fake node"
            )
            self.push()
            self.sleep(None)
        self.view.phase, self.view.started = "Running", True
        self.view.state = running(time.time())
        self.view.ready = "readinessProbe" not in container
        self.push()
        self.sleep(None)

    def _prepare(
        self, container: Json, conf_path: str, files: pod_files.PodFiles
    ) -> tuple[list[str], int]:
        directory = self.kubelet.root / f"{self.namespace}-{self.name}-{self.kubelet.next_serial()}"
        self.directory = directory
        mounted = pod_files.mounts(container, pod_dir.write_volumes(directory, files))
        try:
            conf = pod_dir.read_conf(conf_path, pod_files.local_path(conf_path, mounted))
            address = self._allocate(first_http_port(conf))
            conf_file, port = pod_dir.write_conf(
                directory, conf, mounted, address, egress=self.node.address
            )
        except (SquidConfError, NoAddressLeft) as exc:
            self.view.state = waiting("CreateContainerConfigError", str(exc))
            self.push()
            self.sleep(None)
        assert self.kubelet.squid is not None
        service = f"{self.kubelet.service_prefix}x{directory.name.rsplit('-', 1)[-1]}"
        argv = pod_files.squid_argv(container, self.kubelet.squid, str(conf_file), service)
        return argv, pod_files.probe_port(container, port)

    def _run_squid(self, container: Json, argv: list[str], probe_port: int) -> None:
        assert self.directory is not None
        assert self.address is not None
        delay = self.kubelet.backoff
        quick_exits = 0
        self.view.phase = "Running"
        while True:
            started = time.time()
            self.proc = start_squid(argv, self.directory)
            self.view.started, self.view.ready = True, False
            self.view.state = running(started)
            self.push()
            killed_as = self._watch_process(probe_port, started)
            code = self.proc.returncode
            exit_code = 128 - code if code < 0 else code
            reason = killed_as or ("Completed" if exit_code == 0 else "Error")
            why = "" if killed_as else tail(self.directory / "cache.log")
            ended = terminated(reason, exit_code, started, time.time(), why)
            self.view.started, self.view.ready = False, False
            policy = self.pod["spec"].get("restartPolicy", "Always")
            if policy == "Never" or (policy == "OnFailure" and exit_code == 0):
                self.view.phase = "Failed" if exit_code else "Succeeded"
                self.view.state = ended
                self.push()
                self.sleep(None)
            self.view.restarts += 1
            self.view.last_state = ended
            quick_exits = quick_exits + 1 if time.time() - started < 10 else 1
            if quick_exits >= self.kubelet.crash_loop_after:
                self.view.state = crash_loop_backoff(delay, self.pod)
                self.push()
                self.sleep(delay)
                delay = min(delay * 2, self.kubelet.backoff * 256)

    def _watch_process(self, probe_port: int, started: float) -> str:
        """Until the process exits: Ready once the probe port accepts; the reason it was
        killed for ("" when it exited by itself). An eviction never returns."""
        assert self.proc is not None
        assert self.address is not None
        while self.proc.poll() is None:
            if not self.view.ready and accepts(self.address, probe_port, timeout=0.2):
                self.view.ready = True
                self.push()
            try:
                what = self._commands.get_nowait()
            except queue.Empty:
                self.sleep(0.05 if not self.view.ready else 0.2, wake=True)
                continue
            kill(self.proc)
            if what == "evict":
                self._evicted(started)
            return "OOMKilled" if what == "oom" else "Error"
        return ""

    def _evicted(self, started: float) -> None:
        self.view.phase, self.view.ready, self.view.started = "Failed", False, False
        self.view.reason = "Evicted"
        self.view.message = evicted_message(self.pod)
        self.view.disruption = "TerminationByKubelet"
        self.view.state = terminated("Error", 137, started, time.time())
        self.push()
        self.sleep(None)

    # ---- helpers --------------------------------------------------------------------------

    def _allocate(self, port: int) -> str:
        if self.address is None:
            if self.host_network:
                self.address = self.node.address
            else:
                self.address = self.kubelet.addresses.allocate(port)
            self.view.pod_ip = self.address
        return self.address

    def _lookup(self, resource: str, name: str) -> Json | None:
        return self.kubelet.store.find(resource, self.namespace, name)

    def push(self) -> None:
        view, uid, now = self.view, self.uid, time.time()

        def change(pod: Json) -> None:
            if pod["metadata"]["uid"] == uid:
                pod["status"] = render(pod, view, now)

        self.kubelet.store.mutate("pods", self.namespace, self.name, change)

    def sleep(self, seconds: float | None, *, wake: bool = False) -> None:
        """Wait `seconds` (None: until stopped); Stopped when the pod is to go."""
        if self._stopping.is_set():
            raise Stopped
        if seconds is None:
            self._stopping.wait()
        elif wake:
            self._wake.wait(seconds)
            self._wake.clear()
        else:
            self._stopping.wait(seconds)
        if self._stopping.is_set():
            raise Stopped
