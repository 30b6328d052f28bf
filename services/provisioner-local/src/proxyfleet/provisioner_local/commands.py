"""How each engine is started for one proxy: config text, command lines, and which
argument identifies the engine process in /proc. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import msgspec

from proxyfleet.common.domain.squid import SquidOptions, render_squid_conf
from proxyfleet.provisioner_local.layout import ProxyFolder
from proxyfleet.provisioner_local.marker import Engine
from proxyfleet.provisioner_local.pure import egress_addresses as local_egress

LAUNCHER_MODULE = "proxyfleet.provisioner_local.proxypy_launcher"


class ProxyPyArgs(msgspec.Struct, kw_only=True, frozen=True):
    """What the proxy.py launcher reads from its 0600 file (keeps the password off argv)."""

    argv: list[str]
    basic_auth: str


def squid_conf(
    folder: ProxyFolder,
    bind_host: str,
    port: int,
    connect_ports: list[int],
    source_ranges: list[str] | None = None,
    *,
    loopback_egress: str = "",
) -> str:
    """The shared Squid config, without the destination rules: a local proxy and the dev
    target it is probed against share 127/8. `loopback_egress`: the 127/8 address its
    connections to loopback destinations leave from ("": the kernel's choice)."""
    return render_squid_conf(
        SquidOptions(
            http_port=port,
            htpasswd_path=str(folder.htpasswd),
            bind_address=bind_host,
            pid_file=str(folder.squid_pid),
            cache_log=str(folder.cache_log),
            access_log="none",
            connect_ports=connect_ports,
            deny_local_destinations=False,
            deny_private_destinations=False,
            source_ranges=list(source_ranges or []),
            loopback_egress=loopback_egress,
        )
    )


def egress_address(
    placement: Mapping[str, str], egress_range: str, port_range: tuple[int, int], port: int
) -> str:
    """The 127/8 address a Squid proxy leaves from: its placement's `egress_address` (shared
    with any proxy given the same), else its port's own in `egress_range` ("": 127.0.0.1).
    proxy.py has no equivalent (docs/egress.md): its proxies all leave from 127.0.0.1."""
    chosen = local_egress.placement_address(placement)
    return chosen or local_egress.address_for_port(egress_range, port_range, port)


def squid_argv(squid_binary: str, folder: ProxyFolder) -> list[str]:
    """Squid in the foreground (-N), its config in the folder, a service name of its own."""
    return [squid_binary, "-N", "-f", str(folder.squid_conf), "-n", folder.squid_service_name]


def proxypy_args(
    folder: ProxyFolder, bind_host: str, port: int, username: str, password: str
) -> ProxyPyArgs:
    return ProxyPyArgs(
        argv=[
            "--hostname",
            bind_host,
            "--port",
            str(port),
            "--num-workers",
            "1",
            "--num-acceptors",
            "1",
            "--data-dir",
            str(folder.proxypy_data),
            "--pid-file",
            str(folder.path / "proxypy.pid"),
        ],
        basic_auth=f"{username}:{password}",
    )


def proxypy_argv(python: str, folder: ProxyFolder) -> list[str]:
    return [python, "-m", LAUNCHER_MODULE, str(folder.proxypy_args)]


def engine_signatures(folder: ProxyFolder) -> frozenset[str]:
    """An argv element only this proxy's engine process has (its helpers do not)."""
    return frozenset({str(folder.squid_conf), str(folder.proxypy_args)})


def resolve_engine(
    setting: str, squid_binary: str | None, squid_blocked_at: Path | None
) -> tuple[Engine, str]:
    """The engine to run and why. `squid_blocked_at` is a folder the `proxy` user (Squid
    drops to it when started as root) cannot traverse to reach the state dir.

    Raises ValueError when `setting` asks for Squid and Squid cannot work.
    """
    if setting == "proxy.py":
        return "proxy.py", "configured"
    if squid_binary is None:
        if setting == "squid":
            raise ValueError("engine squid: squid is not installed (no squid on PATH)")
        return "proxy.py", "squid is not installed"
    if squid_blocked_at is not None:
        why = (
            f"squid runs as user proxy, which cannot traverse {squid_blocked_at}"
            " (make it and its parents o+x, or choose another state_dir)"
        )
        if setting == "squid":
            raise ValueError(f"engine squid: {why}")
        return "proxy.py", why
    return "squid", "configured" if setting == "squid" else "squid is installed"
