"""free_port: a port nothing listens on, never one it gave lately (a stack takes every
port before any of its services binds one: two services once got the same port)."""

from __future__ import annotations

from proxyfleet.devstack.servers import free_port


def test_ports_given_before_they_are_bound_are_all_different() -> None:
    ports = [free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)
