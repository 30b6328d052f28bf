"""The command line of each service of the dev stack, on the ports the stack picked."""

from __future__ import annotations

import sys
from pathlib import Path

from proxyfleet.devstack.options import StackOptions
from proxyfleet.devstack.servers import free_port, wait_tcp


def service_bin(name: str) -> str:
    """The console script `name` of this Python environment."""
    return str(Path(sys.executable).parent / name)


def free_or_other(port: int) -> int:
    """`port` when nothing listens there (0: any), else a free one."""
    if not port:
        return free_port()
    try:
        wait_tcp("127.0.0.1", port, timeout=0.05)
    except TimeoutError:
        return port
    return free_port()


def service_commands(
    o: StackOptions,
    *,
    api_port: int,
    gateway_port: int,
    target_url: str,
    ca_file: str,
    gateway_socks_port: int = 0,
) -> dict[str, list[str]]:
    """Every service's command line by name, with `o.extra_services` and `o.extra_args`."""
    # grants skip a proxy after four missed probes (5 s at least: busy hosts probe late)
    max_probe_age = str(max(4 * o.health_interval, 5.0))
    commands = {
        "api": [
            service_bin("proxyfleet-api"),
            "--port",
            str(api_port),
            "--cooldown",
            str(o.cooldown),
            "--max-probe-age",
            max_probe_age,
        ],
        "provisioner": [
            service_bin("proxyfleet-provisioner-local"),
            "--provider",
            "local",
            "--metrics-port",
            str(free_port()),
        ],
        "health": [
            service_bin("proxyfleet-health"),
            "--target",
            target_url,
            "--ca-file",
            ca_file,
            "--interval",
            str(o.health_interval),
            "--timeout",
            str(min(3.0, o.health_interval * 0.8)),
            "--metrics-port",
            str(free_port()),
        ],
        "gc": [
            service_bin("proxyfleet-gc"),
            "--interval",
            str(o.gc_interval),
            "--min-age",
            str(o.gc_min_age),
            "--metrics-port",
            str(free_port()),
        ],
        "pools": [
            service_bin("proxyfleet-pools"),
            "--interval",
            str(o.pools_interval),
            "--metrics-port",
            str(free_port()),
        ],
        # The gateway with the API's cooldown and probe age (its client token comes from
        # the env, as the API's does).
        "gateway": [
            service_bin("proxyfleet-gateway"),
            "--port",
            str(gateway_port),
            "--socks-port",
            str(gateway_socks_port),
            "--cooldown",
            str(o.cooldown),
            "--max-probe-age",
            max_probe_age,
            "--metrics-port",
            str(free_port()),
            "--drain-seconds",  # Ctrl-C on the stack should not wait out a tunnel for 20 s
            "2",
        ],
    }
    commands.update(o.extra_services)
    for name, args in o.extra_args.items():
        commands[name] = commands[name] + args
    return commands
