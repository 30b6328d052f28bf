"""The dev stack end to end: local proxies placed on one loopback exit address are flagged
as sharing it (`egress_shared`) in the API, and one on its own address is not."""

from __future__ import annotations

import pytest
from tests.e2e.journey import Api, wait_for

from proxyfleet.devstack.stack import Stack

pytestmark = pytest.mark.timeout(120)
SHARED = "127.77.251.30"


def test_proxies_on_one_exit_address_are_flagged_shared(stack: Stack) -> None:
    admin = Api(stack.api_url, stack.admin_token)
    ids = []
    for placement in ({"egress_address": SHARED}, {"egress_address": SHARED}, {}):
        r = admin.http.post("/v1/proxies", json={"provider": "local", "placement": placement})
        assert r.status_code == 202, r.text
        ids += [p["id"] for p in r.json()["items"]]

    def flagged() -> list[tuple[str, str, int]] | None:
        found = [admin.proxy(pid) for pid in ids]
        seen = [(str(p["egress_ip"]), str(p["egress_net"]), int(p["egress_shared"])) for p in found]
        return seen if seen[0][2] == seen[1][2] == 2 and seen[2][0] else None

    shared_a, shared_b, alone = wait_for("two proxies flagged as sharing", flagged, 40)
    assert shared_a == shared_b == (SHARED, "127.77.251.0/24", 2)
    assert alone[0] != SHARED
    assert alone[2] == 1
