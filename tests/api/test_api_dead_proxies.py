"""A dead proxy through the real API app: grants skip a proxy with no recent good probe
(--max-probe-age), and a lease on a proxy that turned unhealthy is revoked: renew, report
and release answer 409 `lease_revoked` saying why, GET shows it."""

from __future__ import annotations

import pytest
from tests.api.helpers import Api, ApiFactory, Recorder, error_of, probed, ready_proxy

from proxyfleet.api.settings import ApiSettings
from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.wire.models import Phase


async def test_a_stale_proxy_is_not_granted_and_the_answer_says_why(
    start_api: ApiFactory,
) -> None:
    api = await start_api(max_probe_age=15.0)
    await ready_proxy(api, "ps1")
    api.clock.advance(16)  # no probe for 16 s: health is down

    r = await api.client.post("/v1/leases", json={})
    assert r.status_code == 503
    assert error_of(r) == "probe_stale"
    assert "no good probe in the last 15 s" in r.json()["message"]
    assert r.headers["retry-after"] == "1"

    r = await api.client.post("/v1/leases", json={"proxy_id": "ps1"})
    assert r.status_code == 409
    assert error_of(r) == "probe_stale"
    assert r.json()["message"] == "proxy has no good probe in the last 15 s"

    await probed(api, "ps1")
    r = await api.client.post("/v1/leases", json={"proxy_id": "ps1"})
    assert r.status_code == 201, r.text
    proxy = (await api.admin.get("/v1/proxies/ps1")).json()
    assert proxy["last_ok_at"] == api.clock.now()


async def test_a_lease_on_a_proxy_turned_unhealthy_is_revoked_and_says_why(
    api: Api, events: Recorder
) -> None:
    await ready_proxy(api, "pu1")
    r = await api.client.post("/v1/leases", json={"ttl": 60})
    assert r.status_code == 201, r.text
    lid = r.json()["lease_id"]

    # What health does after --unhealthy-after failed probes.
    await api.registry.transition("pu1", Phase.UNHEALTHY, reason="connect refused")
    revoked = await events.event("lease.revoked", lease_id=lid)
    assert revoked.data.reason == "proxy unhealthy: connect refused"

    why = "lease revoked: proxy unhealthy: connect refused"
    for action, body in (
        ("renew", {"epoch": 1}),
        ("report", {"epoch": 1, "outcome": "failed"}),
        ("release", {"epoch": 1}),
    ):
        r = await api.client.post(f"/v1/leases/{lid}/{action}", json=body)
        assert r.status_code == 409, (action, r.text)
        assert error_of(r) == "lease_revoked"
        assert r.json()["message"].endswith(why)

    got = (await api.client.get(f"/v1/leases/{lid}")).json()
    assert (got["state"], got["reason"]) == ("revoked", "proxy unhealthy: connect refused")
    assert got["proxy_id"] == "pu1"


def test_max_probe_age_must_be_seconds_or_zero() -> None:
    with pytest.raises(ConfigError, match="--max-probe-age"):
        ApiSettings(insecure_dev=True, max_probe_age=-1).check()
    assert ApiSettings(insecure_dev=True, max_probe_age=0).check().max_probe_age == 0
    assert ApiSettings().max_probe_age == 20.0  # 4x health's default interval
