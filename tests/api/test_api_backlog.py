"""The outbox's high-water mark through the API: while NATS is away and the events pile up
past it, new grants and creates are a 503 `events_backlog` with Retry-After; a release,
renewal or report of a lease already held still answers, and readiness shows the backlog."""

from __future__ import annotations

from tests.api.helpers import PROVIDER, ApiFactory, error_of, ready_proxy, until

from proxyfleet.common.core.settings import CommonSettings
from proxyfleet.common.store.replies import BACKLOG_RETRY_AFTER


async def test_past_the_mark_new_work_is_503_and_held_leases_still_end(
    start_api: ApiFactory, redis_url: str, nats_url: str
) -> None:
    common = CommonSettings(redis_url=redis_url, nats_url=nats_url, outbox_high_water=8)
    api = await start_api(common=common)
    await ready_proxy(api, "pb1")
    await ready_proxy(api, "pb2")
    outbox = api.services.backends.registry.outbox

    async def drained() -> bool:
        return await outbox.length() == 0

    await until(drained, 10, "the relay to publish the proxies' events")
    await api.services.backends.nats.close()  # the relay can publish nothing from now on
    r = await api.client.post("/v1/leases", json={"ttl": 60})
    assert r.status_code == 201, r.text
    held = r.json()
    renewal = {"epoch": held["epoch"], "ttl": 60}
    for _ in range(8):  # the rest of the backlog, as other events would make it
        if await outbox.length() >= 8:
            break
        r = await api.client.post(f"/v1/leases/{held['lease_id']}/renew", json=renewal)
        assert r.status_code == 200, r.text
    assert await outbox.length() == 8

    r = await api.client.post("/v1/leases", json={"ttl": 60})
    assert (r.status_code, error_of(r)) == (503, "events_backlog"), r.text
    assert r.headers["retry-after"] == str(int(BACKLOG_RETRY_AFTER))
    assert "high-water mark of 8" in r.json()["message"]
    r = await api.admin.post("/v1/proxies", json={"provider": PROVIDER, "count": 1})
    assert (r.status_code, error_of(r)) == (503, "events_backlog"), r.text

    lease_url = f"/v1/leases/{held['lease_id']}"
    epoch = {"epoch": held["epoch"]}
    r = await api.client.post(f"{lease_url}/report", json={**epoch, "outcome": "ok"})
    assert r.status_code == 200, r.text
    r = await api.client.post(f"{lease_url}/release", json=epoch)
    assert r.status_code == 200, r.text
    ready = (await api.anon.get("/readyz")).json()
    assert ready["outbox_length"] == await outbox.length() > 8
