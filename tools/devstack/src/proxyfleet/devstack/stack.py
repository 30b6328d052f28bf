"""The whole system as local processes: NATS, Redis, the HTTPS target and every service.

Used by `make run` (proxyfleet-dev run) and by the end-to-end tests, so both start the
system the same way.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import httpx

from proxyfleet.devstack.providers import local_provider_yaml
from proxyfleet.devstack.servers import Server, free_port, start_nats, start_redis, wait_tcp
from proxyfleet.devstack.tie import tied

Printer = Callable[[str], None]


@dataclass
class StackOptions:
    base_dir: Path
    """Folder for every runtime file (.dev by default): data, logs, tokens, proxies."""
    api_port: int = 8080
    """API port; a free one is picked when it is taken."""
    gateway_port: int = 8899
    """The gateway's proxy port; a free one is picked when it is taken."""
    nats_url: str = ""
    """Use this NATS instead of starting one."""
    redis_url: str = ""
    """Use this Redis instead of starting one."""
    health_interval: float = 2.0
    """Seconds between two probes of one proxy."""
    gc_interval: float = 10.0
    gc_min_age: float = 30.0
    pools_interval: float = 2.0
    """Seconds between two passes of the pool controller."""
    cooldown: float = 10.0
    """Lease cooldown after release (short in the dev stack)."""
    boot_timeout: float = 30.0
    engine: str = "auto"
    """Local proxy engine: auto, squid or proxy.py."""
    log_level: str = "info"
    installation_id: str = "dev"
    echo: Printer | None = print
    """Where prefixed service output goes (None: only to the log files)."""
    extra_args: dict[str, list[str]] = field(default_factory=dict)
    """More command-line flags per service name (api, provisioner, health, gc, pools)."""
    target_host: str = "127.0.0.1"
    """Address the HTTPS target listens on (and its certificate names). VMs reach the
    target only on an address of theirs, such as a libvirt network's bridge."""
    target_port: int = 0
    """Port of the HTTPS target (0: a free one)."""
    extra_providers: str = ""
    """More entries of the providers config's `providers:` list (YAML, indented by two)."""
    extra_config: str = ""
    """More top-level sections of the providers config (YAML), such as `pools:`."""
    extra_services: dict[str, list[str]] = field(default_factory=dict)
    """More services to start, name -> command line (another provider's provisioner)."""
    tied: bool = False
    """Servers and services end when this process does, even SIGKILLed (tie.py): for
    `proxyfleet-dev run`, whose main thread starts them and lives as long as it does."""


ADMIN_NAME = "dev-admin"
CLIENT_NAME = "dev-client"
"""The names of the dev stack's tokens (in logs and lease records)."""


@dataclass
class Stack:
    opts: StackOptions
    nats_url: str = ""
    redis_url: str = ""
    api_url: str = ""
    gateway_url: str = ""
    """The gateway's proxy endpoint, `http://127.0.0.1:PORT` (credentials not included)."""
    admin_token: str = ""
    client_token: str = ""
    target_url: str = ""
    ca_file: str = ""
    providers_config: str = ""
    commands: dict[str, list[str]] = field(default_factory=dict)
    """Command line of each service, as started (a test may restart one with it)."""
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    servers: list[Server] = field(default_factory=list)
    _threads: list[threading.Thread] = field(default_factory=list)

    # ---- start -----------------------------------------------------------------------

    def start(self) -> None:
        base = self.opts.base_dir.resolve()
        (base / "logs").mkdir(parents=True, exist_ok=True)
        self._start_infra(base)
        self._start_target(base)
        self._write_providers_config(base)
        self._load_tokens(base)
        self.commands = self._service_commands()
        for name, args in self.commands.items():
            self.start_service(name, args)
        self.wait_ready()

    def _start_infra(self, base: Path) -> None:
        self.nats_url = self.opts.nats_url
        if not self.nats_url:
            nats = start_nats(base / "nats", base / "logs" / "nats.log", tied=self.opts.tied)
            self.servers.append(nats)
            self.nats_url = nats.url
        self.redis_url = self.opts.redis_url
        if not self.redis_url:
            redis = start_redis(
                base / "redis", base / "logs" / "redis.log", persistent=True, tied=self.opts.tied
            )
            self.servers.append(redis)
            self.redis_url = redis.url

    def _start_target(self, base: Path) -> None:
        port = self.opts.target_port or free_port()
        host = self.opts.target_host
        tls = base / "tls"
        self.start_service(
            "target",
            [
                sys.executable,
                "-m",
                "proxyfleet.devstack.target",
                "--host",
                host,
                "--port",
                str(port),
                "--dir",
                str(tls),
            ],
        )
        wait_tcp(host, port, timeout=20)
        self.target_url = f"https://{host}:{port}/"
        self.ca_file = str(tls / "ca.pem")

    def _write_providers_config(self, base: Path) -> None:
        target_port = int(self.target_url.rsplit(":", 1)[1].strip("/"))
        path = base / "providers.yaml"
        o = self.opts
        local = local_provider_yaml(base / "local-proxies", o.engine, o.boot_timeout, target_port)
        path.write_text(local + o.extra_providers + o.extra_config)
        self.providers_config = str(path)

    def _load_tokens(self, base: Path) -> None:
        """Dev tokens persist in base/tokens.json so a restart keeps them; the API is
        configured with them as `dev-admin:<secret>` and `dev-client:<secret>`."""
        path = base / "tokens.json"
        data = json.loads(path.read_text()) if path.exists() else {}
        if set(data) != {"admin", "client"} or any(len(v) < 16 for v in data.values()):
            data = {
                "admin": "adm-" + secrets.token_urlsafe(18),
                "client": "cli-" + secrets.token_urlsafe(18),
            }
            path.write_text(json.dumps(data))
            path.chmod(0o600)
        self.admin_token, self.client_token = data["admin"], data["client"]

    def _service_commands(self) -> dict[str, list[str]]:
        port = self.opts.api_port or free_port()
        try:
            wait_tcp("127.0.0.1", port, timeout=0.05)
            port = free_port()  # taken: pick another and say so in the banner
        except TimeoutError:
            pass
        self.api_url = f"http://127.0.0.1:{port}"
        o = self.opts
        commands = {
            "api": [
                _bin("proxyfleet-api"),
                "--port",
                str(port),
                "--cooldown",
                str(o.cooldown),
                # grants skip a proxy after four missed probes (5 s at least: busy hosts probe late)
                "--max-probe-age",
                str(max(4 * o.health_interval, 5.0)),
            ],
            "provisioner": [
                _bin("proxyfleet-provisioner-local"),
                "--provider",
                "local",
                "--metrics-port",
                str(free_port()),
            ],
            "health": [
                _bin("proxyfleet-health"),
                "--target",
                self.target_url,
                "--ca-file",
                self.ca_file,
                "--interval",
                str(o.health_interval),
                "--timeout",
                str(min(3.0, o.health_interval * 0.8)),
                "--metrics-port",
                str(free_port()),
            ],
            "gc": [
                _bin("proxyfleet-gc"),
                "--interval",
                str(o.gc_interval),
                "--min-age",
                str(o.gc_min_age),
                "--metrics-port",
                str(free_port()),
            ],
            "pools": [
                _bin("proxyfleet-pools"),
                "--interval",
                str(o.pools_interval),
                "--metrics-port",
                str(free_port()),
            ],
            "gateway": self._gateway_command(),
        }
        commands.update(o.extra_services)
        for name, args in o.extra_args.items():
            commands[name] = commands[name] + args
        return commands

    def _gateway_command(self) -> list[str]:
        """The gateway on its own port, with the API's cooldown and probe age (its client
        token comes from the env, as the API's does)."""
        port = _free_or_other(self.opts.gateway_port)
        self.gateway_url = f"http://127.0.0.1:{port}"
        o = self.opts
        return [
            _bin("proxyfleet-gateway"),
            "--port",
            str(port),
            "--cooldown",
            str(o.cooldown),
            "--max-probe-age",
            str(max(4 * o.health_interval, 5.0)),
            "--metrics-port",
            str(free_port()),
            "--drain-seconds",  # Ctrl-C on the stack should not wait out a tunnel for 20 s
            "2",
        ]

    def service_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            # The names the services read first (NATS_URL/REDIS_URL are only fallbacks).
            PROXYFLEET_NATS_URL=self.nats_url,
            PROXYFLEET_REDIS_URL=self.redis_url,
            PROXYFLEET_PROVIDERS_CONFIG=self.providers_config,
            PROXYFLEET_INSTALLATION_ID=self.opts.installation_id,
            PROXYFLEET_LOG_FORMAT="console",
            PROXYFLEET_LOG_LEVEL=self.opts.log_level,
            PROXYFLEET_API_ADMIN_TOKENS=f"{ADMIN_NAME}:{self.admin_token}",
            PROXYFLEET_API_CLIENT_TOKENS=f"{CLIENT_NAME}:{self.client_token}",
            PROXYFLEET_GATEWAY_CLIENT_TOKENS=f"{CLIENT_NAME}:{self.client_token}",
            PYTHONUNBUFFERED="1",
        )
        return env

    def start_service(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        """Start (or restart) one service; its output goes to logs/<name>.log and the echo."""
        log = open(self.opts.base_dir.resolve() / "logs" / f"{name}.log", "ab")  # noqa: SIM115
        # A session of its own: a terminal's Ctrl-C reaches only the launcher, which then
        # stops services before the NATS and Redis they need.
        proc = subprocess.Popen(
            tied(args) if self.opts.tied else args,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=self.service_env(),
            start_new_session=True,
        )
        self.processes[name] = proc
        assert proc.stdout is not None
        t = threading.Thread(
            target=_pump, args=(name, proc.stdout, log, self.opts.echo), daemon=True
        )
        t.start()
        self._threads.append(t)
        return proc

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self.processes.items():
                if proc.poll() is not None:
                    raise RuntimeError(
                        f"{name} exited with {proc.returncode} (see logs/{name}.log)"
                    )
            try:
                if httpx.get(f"{self.api_url}/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"the API at {self.api_url} was not ready within {timeout}s")

    # ---- stop ------------------------------------------------------------------------

    def stop(self) -> None:
        for proc in self.processes.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.processes.values():
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if not self.opts.redis_url:
            # Redis was ours and is gone with its data: the proxies it knew are orphans now.
            stop_local_proxies(self.opts.base_dir.resolve() / "local-proxies")
        for server in reversed(self.servers):
            server.stop()
        for t in self._threads:
            t.join(timeout=2)


def _free_or_other(port: int) -> int:
    """`port` when nothing listens there (0: any), else a free one."""
    if not port:
        return free_port()
    try:
        wait_tcp("127.0.0.1", port, timeout=0.05)
    except TimeoutError:
        return port
    return free_port()


def stop_local_proxies(state_dir: Path) -> int:
    """Kill every proxy process the local provider left under state_dir and remove it."""
    stopped = 0
    for marker in state_dir.glob("*/*/managed.json"):
        try:
            pid = int(json.loads(marker.read_text()).get("pid", 0))
        except (OSError, ValueError):
            continue
        if pid > 0:
            try:
                os.killpg(pid, signal.SIGKILL)
                stopped += 1
            except (ProcessLookupError, PermissionError):
                pass
    shutil.rmtree(state_dir, ignore_errors=True)
    return stopped


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def _pump(name: str, stream: IO[bytes], log: IO[bytes], echo: Printer | None) -> None:
    prefix = f"{name:>11} | "
    with log:
        for raw in iter(stream.readline, b""):
            log.write(raw)
            log.flush()
            if echo is not None:
                try:
                    echo(prefix + raw.decode(errors="replace").rstrip())
                except OSError:  # the terminal or pipe went away: keep the log file going
                    echo = None
