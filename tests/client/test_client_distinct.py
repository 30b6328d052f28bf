"""The client's `distinct` grants against the live API: exit networks kept apart, the
exit address on the lease, and the API's reason when none qualifies."""

from __future__ import annotations

import pytest
from tests.client.conftest import LiveApi

from proxyfleet.client import Client
from proxyfleet.client.errors import Unavailable
from proxyfleet.common.domain.egress import network


def on_address(live_api: LiveApi, pid: str, ip: str) -> None:
    live_api.ready_proxy(pid)
    live_api.run(live_api.registry.update(pid, egress_ip=ip, egress_net=network(ip)))


def test_distinct_grants_keep_a_clients_leases_on_different_networks(
    live_api: LiveApi,
) -> None:
    on_address(live_api, "a1", "127.0.1.1")
    on_address(live_api, "a2", "127.0.1.2")
    with Client(live_api.url, live_api.client_token) as client:
        first = client.grant_lease(ttl=60, distinct="subnet")
        assert first.proxy.egress_ip in ("127.0.1.1", "127.0.1.2")
        assert client.get_lease(first.lease_id).egress_ip == first.proxy.egress_ip
        with pytest.raises(Unavailable) as refused:
            client.grant_lease(ttl=60, distinct="subnet", max_wait=0)
        assert refused.value.error == "egress_not_distinct"
        assert "does not already hold" in refused.value.message
        # Without `distinct` the other proxy of that network is granted (another address).
        second = client.grant_lease(ttl=60)
        assert second.proxy.egress_ip != first.proxy.egress_ip
