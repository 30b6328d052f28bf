"""Local proxies as detached processes, one folder each. Blocking and idempotent; the
async adapter runs these calls in threads and translates their errors."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

import msgspec

from proxyfleet.common.core.errors import PermanentProviderError, TemporaryProviderError
from proxyfleet.common.core.ids import resource_name
from proxyfleet.common.domain.squid import htpasswd_line
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.wire.models import ManagedResource, Provisioned, ProxySpec
from proxyfleet.provisioner_local import commands
from proxyfleet.provisioner_local.files import (
    Owner,
    blocked_for,
    make_dirs,
    prepare_folder,
    read_credentials,
    read_marker,
    squid_owner,
    write_credentials,
    write_file,
    write_marker,
)
from proxyfleet.provisioner_local.layout import MARKER_NAME, InstallationLayout, ProxyFolder
from proxyfleet.provisioner_local.locks import file_lock
from proxyfleet.provisioner_local.marker import Engine, Marker
from proxyfleet.provisioner_local.options import LocalOptions
from proxyfleet.provisioner_local.ports import pick_port, reserved_ports
from proxyfleet.provisioner_local.processes import (
    ProcessExited,
    find_session_leader,
    is_engine,
    kill_leftovers,
    log_tail,
    port_is_free,
    spawn_detached,
    stop_process_group,
    wait_listening,
    wait_port_free,
)
from proxyfleet.provisioner_local.pure import egress_addresses as local_egress

log = get_logger("proxyfleet.provisioner_local")
PORT_FREE_WAIT = 3.0
"""Seconds a restart waits for a dead engine's port to be let go (see wait_port_free)."""


class LocalProxies:
    def __init__(self, options: LocalOptions) -> None:
        """Raises ValueError when the configured engine cannot run here."""
        self._opts = options
        self._layout = InstallationLayout(options.state_dir.absolute(), options.installation_id)
        self._squid = shutil.which("squid") or shutil.which("squid", path="/usr/sbin:/sbin")
        owner = squid_owner()
        blocked = blocked_for(owner, self._layout.root) if owner else None
        self.engine, why = commands.resolve_engine(options.engine, self._squid, blocked)
        self._owner: Owner | None = owner if self.engine == "squid" else None
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self.host = options.advertise_host or options.bind_host
        fell_back = self._squid is not None and self.engine != "squid"
        report = log.warning if fell_back and options.engine == "auto" else log.info
        report("local proxies", engine=self.engine, why=why, root=str(self._layout.root))

    # ---- the Provider operations --------------------------------------------------

    def create(self, spec: ProxySpec) -> Provisioned:
        if spec.installation_id != self._opts.installation_id:
            raise PermanentProviderError(
                f"installation {spec.installation_id!r} is not this provider's"
                f" ({self._opts.installation_id!r})"
            )
        folder = self._layout.folder(spec.proxy_id)
        # A bad placement fails here, before anything starts (ValueError: permanent).
        local_egress.placement_address(spec.placement)
        self._reap()
        with file_lock(self._layout.lock_path(spec.proxy_id)):
            marker = read_marker(folder.marker)
            leaders = find_session_leader(commands.engine_signatures(folder))
            if marker is not None and leaders:
                write_credentials(folder, spec)  # a folder made before proxy.json existed
                return self._adopt(folder, marker, leaders, spec.password)
            for pid in leaders:  # an engine without a marker: state unknown, start over
                stop_process_group(pid, self._opts.stop_grace)
            return self._start(spec, folder, marker)

    def delete(self, proxy_id: str) -> None:
        folder = self._layout.folder(proxy_id)
        lock = self._layout.lock_path(proxy_id)
        with file_lock(lock):
            for pid in find_session_leader(commands.engine_signatures(folder)):
                stop_process_group(pid, self._opts.stop_grace, self._children.get(pid))
                self._children.pop(pid, None)
            if folder.path.exists():
                shutil.rmtree(folder.path)
                log.info("local.proxy_stopped", proxy_id=proxy_id)
            lock.unlink(missing_ok=True)  # while holding it: see file_lock

    def list_managed(self) -> list[ManagedResource]:
        found: list[ManagedResource] = []
        for path in sorted(self._layout.root.glob(f"*/{MARKER_NAME}")):
            marker = read_marker(path)
            if (
                marker is None
                or marker.installation_id != self._opts.installation_id
                or marker.proxy_id != path.parent.name
            ):
                continue
            creds = read_credentials(self._layout.folder(marker.proxy_id).credentials)
            found.append(
                ManagedResource(
                    resource_id=resource_name(marker.proxy_id),
                    proxy_id=marker.proxy_id,
                    installation_id=marker.installation_id,
                    created_at=marker.created_at,
                    zone=marker.zone,
                    host=self.host if marker.pid else "",
                    port=marker.port if marker.pid else 0,
                    username=creds.username if creds else "",
                    password=creds.password if creds else "",
                    labels=dict(creds.labels) if creds else {},
                    placement=dict(creds.placement) if creds else {},
                )
            )
        return found

    # ---- supervision (proxy processes that died) --------------------------------------

    def dead(self) -> list[str]:
        """This installation's proxies whose engine process is no longer running."""
        out: list[str] = []
        for found in self.list_managed():
            folder = self._layout.folder(found.proxy_id)
            marker = read_marker(folder.marker)
            if marker is None or marker.pid <= 0:
                continue  # being started (or never was): create owns it
            if not is_engine(marker.pid, commands.engine_signatures(folder)):
                out.append(found.proxy_id)
        return out

    def revive(self, proxy_id: str) -> int:
        """Start a dead proxy's engine again from the files it left, on the same port (the
        registry keeps that address); returns its pid, 0 when the proxy was deleted
        meanwhile. Temporary or permanent provider errors as create."""
        folder = self._layout.folder(proxy_id)
        self._reap()
        with file_lock(self._layout.lock_path(proxy_id)):
            marker = read_marker(folder.marker)
            if marker is None:
                return 0
            leaders = find_session_leader(commands.engine_signatures(folder))
            if leaders:  # alive again (a create adopted or restarted it meanwhile)
                return leaders[0]
            kill_leftovers(marker.pid, folder.path)
            if not wait_port_free(self._opts.bind_host, marker.port, PORT_FREE_WAIT):
                raise TemporaryProviderError(f"port {marker.port} of proxy {proxy_id} is taken")
            if marker.engine == "proxy.py":
                argv = commands.proxypy_argv(sys.executable, folder)
            elif self._squid is None:
                raise PermanentProviderError(f"proxy {proxy_id} runs squid, not found here")
            else:
                folder.squid_pid.unlink(missing_ok=True)  # a stale one stops Squid starting
                argv = commands.squid_argv(self._squid, folder)
            child = spawn_detached(argv, folder.log, folder.path)
            self._children[child.pid] = child
            write_marker(folder.marker, msgspec.structs.replace(marker, pid=child.pid))
            self._wait(folder, marker.engine, child.pid, marker.port, "", child)
        return child.pid

    # ---- steps ----------------------------------------------------------------------

    def _reap(self) -> None:
        """Collect the exit status of our children that ended (no zombies left behind)."""
        for pid, child in dict(self._children).items():
            if child.poll() is not None:
                self._children.pop(pid, None)

    def _adopt(
        self, folder: ProxyFolder, marker: Marker, leaders: list[int], secret: str
    ) -> Provisioned:
        pid = marker.pid if marker.pid in leaders else leaders[0]
        for extra in leaders:
            if extra != pid:
                stop_process_group(extra, self._opts.stop_grace)
        if pid != marker.pid:
            write_marker(folder.marker, msgspec.structs.replace(marker, pid=pid))
        self._wait(folder, marker.engine, pid, marker.port, secret)
        log.info("local.proxy_adopted", proxy_id=folder.proxy_id, port=marker.port, pid=pid)
        return self._provisioned(folder.proxy_id, marker.port)

    def _start(self, spec: ProxySpec, folder: ProxyFolder, old: Marker | None) -> Provisioned:
        make_dirs(self._layout.root)
        prepare_folder(folder.path, self._owner)
        write_credentials(folder, spec)
        with file_lock(self._layout.ports_lock):
            markers = self._layout.state_dir.glob(self._layout.all_markers_glob())
            port = pick_port(
                self._opts.port_range,
                reserved_ports(markers, except_marker=folder.marker),
                lambda p: port_is_free(self._opts.bind_host, p),
                preferred=old.port if old else None,
            )
            if port is None:
                raise TemporaryProviderError(f"no free port in {self._opts.port_range}")
            marker = Marker(
                proxy_id=spec.proxy_id,
                installation_id=spec.installation_id,
                created_at=old.created_at if old else time.time(),
                port=port,
                engine=self.engine,
                zone=spec.zone,
            )
            write_marker(folder.marker, marker)  # reserves the port
        child = spawn_detached(
            self._write_engine_files(folder, port, spec), folder.log, folder.path
        )
        self._children[child.pid] = child
        write_marker(folder.marker, msgspec.structs.replace(marker, pid=child.pid))
        self._wait(folder, self.engine, child.pid, port, spec.password, child)
        log.info(
            "local.proxy_started",
            proxy_id=spec.proxy_id,
            port=port,
            pid=child.pid,
            engine=self.engine,
        )
        return self._provisioned(spec.proxy_id, port)

    def _write_engine_files(self, folder: ProxyFolder, port: int, spec: ProxySpec) -> list[str]:
        """The engine's config and credentials; returns its command line."""
        if self.engine == "proxy.py":
            args = commands.proxypy_args(
                folder, self._opts.bind_host, port, spec.username, spec.password
            )
            write_file(folder.proxypy_args, msgspec.json.encode(args), 0o600)
            return commands.proxypy_argv(sys.executable, folder)
        assert self._squid is not None
        group = self._owner.gid if self._owner else None
        mode = 0o640 if self._owner else 0o600
        line = htpasswd_line(spec.username, spec.password)
        write_file(folder.htpasswd, line.encode(), mode, group)
        o = self._opts
        egress = commands.egress_address(spec.placement, o.egress_range, o.port_range, port)
        conf = commands.squid_conf(
            folder, o.bind_host, port, o.connect_ports, o.source_ranges, loopback_egress=egress
        )
        write_file(folder.squid_conf, conf.encode(), mode, group)
        folder.squid_pid.unlink(missing_ok=True)  # a stale one stops Squid from starting
        return commands.squid_argv(self._squid, folder)

    def _wait(
        self,
        folder: ProxyFolder,
        engine: Engine,
        pid: int,
        port: int,
        secret: str,
        child: subprocess.Popen[bytes] | None = None,
    ) -> None:
        try:
            wait_listening(pid, self.host, port, self._opts.start_timeout, child)
        except ProcessExited:
            tail = " | ".join(
                t for t in (log_tail(p, [secret]) for p in (folder.log, folder.cache_log)) if t
            )
            raise PermanentProviderError(
                f"{engine} for proxy {folder.proxy_id} exited at once: {tail or 'no output'}"
            ) from None
        except TimeoutError:
            stop_process_group(pid, self._opts.stop_grace, child)
            raise TemporaryProviderError(
                f"{engine} for proxy {folder.proxy_id} did not listen on port {port}"
                f" within {self._opts.start_timeout:g}s"
            ) from None

    def _provisioned(self, proxy_id: str, port: int) -> Provisioned:
        return Provisioned(resource_id=resource_name(proxy_id), host=self.host, port=port)
