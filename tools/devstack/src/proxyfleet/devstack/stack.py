"""The whole system as local processes: NATS, Redis, the HTTPS target and every service.

Used by `make run` (proxyfleet-dev run) and by the end-to-end tests, so both start the
system the same way.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import httpx

from proxyfleet.devstack.commands import free_or_other, service_commands
from proxyfleet.devstack.options import Printer, StackOptions
from proxyfleet.devstack.providers import local_provider_yaml, stop_local_proxies
from proxyfleet.devstack.servers import Server, free_port, start_nats, start_redis, wait_tcp
from proxyfleet.devstack.tie import tied

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
    gateway_socks_url: str = ""
    """Its SOCKS5 endpoint, `socks5h://127.0.0.1:PORT` ("" when the stack runs none)."""
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
        api_port = free_or_other(self.opts.api_port)  # taken: another, said in the banner
        gateway_port = free_or_other(self.opts.gateway_port)
        socks_port = free_or_other(self.opts.gateway_socks_port)
        self.api_url = f"http://127.0.0.1:{api_port}"
        self.gateway_url = f"http://127.0.0.1:{gateway_port}"
        self.gateway_socks_url = f"socks5h://127.0.0.1:{socks_port}"
        return service_commands(
            self.opts,
            api_port=api_port,
            gateway_port=gateway_port,
            gateway_socks_port=socks_port,
            target_url=self.target_url,
            ca_file=self.ca_file,
        )

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
