"""Exit addresses through the whole system on the fake GCE: VMs without an external IP
(`external_ip: false`) leave through the network's Cloud NAT, one address for all; health
records it on both proxies and flags it as shared, and a grant never hands out the second
while the first is leased (exclusivity by `ip`, the default)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.e2e.gcp_stack import gcp_stack
from tests.e2e.journey import Api, wait_for
from tests.gcp.fake_gce import FakeGce, Settings

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def fake() -> Iterator[FakeGce]:
    f = FakeGce(settings=Settings()).start()
    try:
        yield f
    finally:
        f.close()


def test_proxies_behind_cloud_nat_are_flagged_and_never_leased_together(
    fake: FakeGce, nats_url: str, redis_url: str
) -> None:
    nat = fake.settings.cloud_nat_address
    with gcp_stack(fake, nats_url, redis_url, db=9, extra_gcp="      external_ip: false\n") as st:
        admin = Api(st.api_url, st.admin_token)
        client = Api(st.api_url, st.client_token)
        r = admin.http.post("/v1/proxies", json={"provider": "gcp", "count": 2})
        assert r.status_code == 202, r.text
        ids = [p["id"] for p in r.json()["items"]]

        def both_known() -> bool:
            got = [admin.proxy(i) for i in ids]
            return all(p["phase"] == "ready" and p["egress_ip"] for p in got)

        wait_for("2 ready gcp proxies with their exit address", both_known, timeout=60)
        proxies: list[dict[str, Any]] = [admin.proxy(i) for i in ids]
        assert [p["egress_ip"] for p in proxies] == [nat, nat]
        assert [p["egress_shared"] for p in proxies] == [2, 2]
        assert nat not in {p["host"] for p in proxies}  # reached at their internal addresses
        assert all(v["natIP"] is None for v in fake.instances())

        first = client.http.post("/v1/leases", json={"ttl": 60, "holder": "nat-1"})
        assert first.status_code == 201, first.text
        assert first.json()["proxy"]["egress_ip"] == nat
        second = client.http.post("/v1/leases", json={"ttl": 60, "holder": "nat-2"})
        assert second.status_code == 503, second.text
        assert "Retry-After" in second.headers
        assert "1 skipped for an exit address another lease holds" in second.json()["message"]
