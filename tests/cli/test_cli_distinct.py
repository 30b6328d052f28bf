"""`proxyfleet leases grant --distinct` against the live API."""

from __future__ import annotations

import json

from tests.cli.conftest import Cli, LiveApi

from proxyfleet.common.domain.egress import network


def test_grant_distinct_subnet_refuses_a_network_already_held(cli: Cli, live_api: LiveApi) -> None:
    for pid, ip in (("a1", "127.0.1.1"), ("a2", "127.0.1.2")):
        live_api.ready_proxy(pid)
        live_api.run(live_api.registry.update(pid, egress_ip=ip, egress_net=network(ip)))
    granted = cli.run("leases", "grant", "--ttl", "60", "--distinct", "subnet")
    assert granted.returncode == 0, granted.stderr
    assert json.loads(granted.stdout)["proxy"]["egress_ip"].startswith("127.0.1.")
    refused = cli.run("leases", "grant", "--distinct", "subnet", "--wait", "0")
    assert refused.returncode == 6, refused.stderr  # unavailable
    assert "does not already hold" in refused.stderr
    table = cli.run("leases", "grant", "--ttl", "60", "-o", "table")
    assert table.returncode == 0, table.stderr
    assert "EGRESS" in table.stdout
    assert "127.0.1." in table.stdout
    bad = cli.run("leases", "grant", "--distinct", "host")
    assert bad.returncode == 2, bad.stderr
