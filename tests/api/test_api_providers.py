"""GET /v1/providers: the configured providers with their zones and counts by phase."""

from __future__ import annotations

from tests.api.helpers import OTHER, PROVIDER, Api, ready_proxy


async def test_providers_lists_counts_by_phase(api: Api) -> None:
    await ready_proxy(api, "pp1")
    await api.admin.post("/v1/proxies", json={"provider": OTHER, "count": 2})
    r = await api.client.get("/v1/providers")
    assert r.status_code == 200
    items = {p["name"]: p for p in r.json()["items"]}
    assert items[PROVIDER]["type"] == "local"
    assert items[PROVIDER]["zones"] == ["z1", "z2"]
    assert items[PROVIDER]["counts"]["ready"] == 1
    assert items[OTHER]["counts"]["pending"] == 2
    assert items[OTHER]["counts"]["ready"] == 0
