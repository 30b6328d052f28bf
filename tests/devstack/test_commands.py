"""The dev stack's service command lines: the API and the gateway grant alike, and a test's
extra flags and services are added."""

from __future__ import annotations

import socket
from pathlib import Path

from proxyfleet.devstack.commands import free_or_other, service_commands
from proxyfleet.devstack.options import StackOptions


def flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def test_the_api_and_the_gateway_share_cooldown_and_probe_age(tmp_path: Path) -> None:
    opts = StackOptions(base_dir=tmp_path, cooldown=7.0, health_interval=2.0)
    commands = service_commands(
        opts, api_port=8081, gateway_port=8898, target_url="https://t/", ca_file="/ca.pem"
    )
    api, gateway = commands["api"], commands["gateway"]
    assert (flag(api, "--port"), flag(gateway, "--port")) == ("8081", "8898")
    for name in ("--cooldown", "--max-probe-age"):
        assert flag(api, name) == flag(gateway, name)
    assert flag(api, "--max-probe-age") == "8.0"  # four missed probes
    assert (flag(commands["health"], "--target"), flag(commands["health"], "--ca-file")) == (
        "https://t/",
        "/ca.pem",
    )


def test_extra_args_and_services_are_added(tmp_path: Path) -> None:
    opts = StackOptions(
        base_dir=tmp_path, extra_args={"api": ["--x", "1"]}, extra_services={"kvm": ["kvm-bin"]}
    )
    commands = service_commands(opts, api_port=1, gateway_port=2, target_url="", ca_file="")
    assert commands["api"][-2:] == ["--x", "1"]
    assert commands["kvm"] == ["kvm-bin"]
    assert list(commands) == ["api", "provisioner", "health", "gc", "pools", "gateway", "kvm"]


def test_a_taken_port_is_replaced_by_a_free_one() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        other = free_or_other(port)
    assert other not in (port, 0)
    assert free_or_other(0) > 0


def test_a_stack_beside_others_picks_every_listening_port_free(tmp_path: Path) -> None:
    opts = StackOptions.on_free_ports(tmp_path, cooldown=1.0)
    assert (opts.api_port, opts.gateway_port, opts.gateway_socks_port) == (0, 0, 0)
    assert (opts.base_dir, opts.cooldown) == (tmp_path, 1.0)
    assert StackOptions.on_free_ports(tmp_path, api_port=9000).api_port == 9000
    assert StackOptions(base_dir=tmp_path).gateway_port == 8899  # make run's own
