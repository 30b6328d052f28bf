"""The end-to-end journey of issue #2, against every service running as its own process
over real NATS and Redis, with real proxy processes and a local HTTPS target."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.e2e.journey import (
    Api,
    EventTap,
    connect_status,
    marker_pid,
    proxy_processes_for,
    wait_for,
)

from proxyfleet.common.providers import load_providers_config
from proxyfleet.common.wire.models import ProxySpec
from proxyfleet.devstack.stack import CLIENT_NAME, Stack
from proxyfleet.provisioner_local.adapter import LocalProvider, local_options
from proxyfleet.provisioner_local.pure.config import LocalProviderConfig

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def events(stack: Stack) -> Iterator[list[str]]:
    """Event types seen by a plain NATS subscriber on proxyfleet.events.>."""
    with EventTap(stack.nats_url, "proxyfleet.events.>") as tap:
        yield tap.seen


def _state_dir(stack: Stack) -> Path:
    cfg = load_providers_config(stack.providers_config).get("local", LocalProviderConfig)
    assert cfg.local is not None
    return Path(cfg.local.state_dir) / stack.opts.installation_id


def test_journey(stack: Stack, events: list[str]) -> None:
    admin = Api(stack.api_url, stack.admin_token)
    client = Api(stack.api_url, stack.client_token)
    state_dir = _state_dir(stack)

    # 1. create three proxies; all ready after real CONNECT probes
    key = {"Idempotency-Key": "e2e-journey-create"}
    r = admin.http.post("/v1/proxies", json={"provider": "local", "count": 3}, headers=key)
    assert r.status_code == 202, r.text
    ids = [p["id"] for p in r.json()["items"]]
    assert len(ids) == 3
    # a retry (its answer lost, say) creates nothing new
    r = admin.http.post("/v1/proxies", json={"provider": "local", "count": 3}, headers=key)
    assert [p["id"] for p in r.json()["items"]] == ids
    wait_for(
        "3 ready proxies",
        lambda: all(ph == "ready" for ph in admin.phases(ids).values()),
        timeout=30,
    )

    # 2. a client lease; fetch a page from the local HTTPS target through it
    r = client.http.post("/v1/leases", json={"ttl": 60, "holder": "e2e"})
    assert r.status_code == 201, r.text
    lease = r.json()
    proxy = lease["proxy"]
    r = admin.http.get(f"/v1/leases/{lease['lease_id']}")
    assert r.json()["client"] == CLIENT_NAME  # the token's name, its owner
    with httpx.Client(
        proxy=proxy["url"], verify=ssl.create_default_context(cafile=stack.ca_file), timeout=10
    ) as via:
        page = via.get(stack.target_url)
    assert page.status_code == 200
    assert page.json()["ok"] is True
    target = stack.target_url.removeprefix("https://").rstrip("/")
    assert " 407 " in connect_status(proxy["host"], proxy["port"], target) + " "
    creds = proxy["url"].split("//", 1)[1].rsplit("@", 1)[0]
    auth = f"Proxy-Authorization: Basic {base64.b64encode(creds.encode()).decode()}\r\n"
    assert " 200 " in connect_status(proxy["host"], proxy["port"], target, auth)

    # 3. the same proxy again: 409 with Retry-After
    r = client.http.post("/v1/leases", json={"proxy_id": proxy["id"]})
    assert r.status_code == 409, r.text
    assert int(r.headers["retry-after"]) >= 1

    # 4. release; during the cooldown that proxy is not granted
    r = client.http.post(f"/v1/leases/{lease['lease_id']}/release", json={"epoch": lease["epoch"]})
    assert r.status_code == 200, r.text
    r = client.http.post("/v1/leases", json={"proxy_id": proxy["id"]})
    assert r.status_code == 409
    assert "cool" in r.json()["message"]
    others = []
    for _ in range(2):
        r = client.http.post("/v1/leases", json={"ttl": 30})
        assert r.status_code == 201, r.text
        others.append(r.json())
    assert proxy["id"] not in {o["proxy"]["id"] for o in others}
    r = client.http.post("/v1/leases", json={"ttl": 30})
    assert r.status_code == 503
    assert int(r.headers["retry-after"]) >= 1
    for o in others:
        client.http.post(f"/v1/leases/{o['lease_id']}/release", json={"epoch": o["epoch"]})

    # 5. report blocked for a target: banned for that target only
    def grant_when_cooled(target_: str) -> dict[str, Any]:
        def attempt() -> dict[str, Any] | None:
            r = client.http.post(
                "/v1/leases", json={"proxy_id": proxy["id"], "target": target_, "ttl": 30}
            )
            if r.status_code == 201:
                body: dict[str, Any] = r.json()
                return body
            assert r.status_code == 409, r.text
            assert "cool" in r.json()["message"], r.text
            return None

        return wait_for(f"a lease for {target_} after the cooldown", attempt)

    blocked = grant_when_cooled("shop.example")
    lease_url = f"/v1/leases/{blocked['lease_id']}"
    r = client.http.post(
        f"{lease_url}/report", json={"epoch": blocked["epoch"], "outcome": "blocked"}
    )
    assert r.status_code == 200, r.text
    assert client.http.post(f"{lease_url}/release", json={"epoch": blocked["epoch"]}).is_success
    r = client.http.post(f"{lease_url}/release", json={"epoch": blocked["epoch"]})
    assert r.status_code == 409  # already released
    other_target = grant_when_cooled("news.example")
    r = client.http.post(
        "/v1/leases", json={"proxy_id": proxy["id"], "target": "shop.example", "ttl": 30}
    )
    assert r.status_code == 409
    assert "leased" in r.json()["message"]
    client.http.post(
        f"/v1/leases/{other_target['lease_id']}/release", json={"epoch": other_target["epoch"]}
    )
    time.sleep(stack.opts.cooldown + 0.2)
    r = client.http.post(
        "/v1/leases", json={"proxy_id": proxy["id"], "target": "shop.example", "ttl": 30}
    )
    assert r.status_code == 409
    assert "banned" in r.json()["message"]

    # 6. a hung proxy process (SIGSTOP): unhealthy, and the lease on it revoked with the
    #    reason; kill -9 it: the provisioner restarts it on its port and it is ready again;
    #    then delete it: gone
    victim = ids[2]
    r = client.http.post("/v1/leases", json={"proxy_id": victim, "ttl": 120})
    assert r.status_code == 201, r.text
    held = r.json()
    hung = marker_pid(state_dir, victim)
    os.killpg(hung, signal.SIGSTOP)
    try:
        wait_for("unhealthy", lambda: admin.proxy(victim)["phase"] == "unhealthy", timeout=15)
    finally:
        os.killpg(hung, signal.SIGKILL)
    got = client.http.get(f"/v1/leases/{held['lease_id']}").json()
    assert got["state"] == "revoked"
    assert got["reason"].startswith("proxy unhealthy: ")
    r = client.http.post(f"/v1/leases/{held['lease_id']}/renew", json={"epoch": held["epoch"]})
    assert r.status_code == 409
    assert r.json()["error"] == "lease_revoked"
    wait_for("restarted", lambda: marker_pid(state_dir, victim) not in (0, hung), timeout=15)
    wait_for("ready again", lambda: admin.proxy(victim)["phase"] == "ready", timeout=15)
    r = admin.http.delete(f"/v1/proxies/{victim}", params={"force": "true"})
    assert r.status_code == 202, r.text
    wait_for("deleted", lambda: admin.proxy(victim)["phase"] == "deleted")
    wait_for("folder removed", lambda: not (state_dir / victim).exists())

    # 7. an orphan managed proxy process: GC removes it after the minimum age
    cfg = load_providers_config(stack.providers_config).get("local", LocalProviderConfig)
    assert cfg.local is not None
    provider = LocalProvider(local_options(cfg.local, stack.opts.installation_id))
    orphan = "p0rphan0000000000001"
    asyncio.run(
        provider.create(
            ProxySpec(
                proxy_id=orphan,
                installation_id=stack.opts.installation_id,
                zone="local-a",
                username="o",
                password="orphan-pass",
            )
        )
    )
    assert proxy_processes_for(orphan)
    wait_for(
        "orphan collected",
        lambda: not (state_dir / orphan).exists() and not proxy_processes_for(orphan),
        timeout=30,
    )

    # 8. kill -9 the provisioner during a create, restart it: ready exactly once
    r = admin.http.post("/v1/proxies", json={"provider": "local", "count": 4})
    assert r.status_code == 202
    fresh = [p["id"] for p in r.json()["items"]]
    wait_for(
        "a create in progress",
        lambda: any(ph != "pending" for ph in admin.phases(fresh).values()),
        timeout=10,
    )
    stack.processes["provisioner"].send_signal(signal.SIGKILL)
    stack.processes["provisioner"].wait()
    stack.start_service("provisioner", stack.commands["provisioner"])
    wait_for(
        "all ready after restart",
        lambda: all(ph == "ready" for ph in admin.phases(fresh).values()),
        timeout=40,
    )
    for pid in fresh:
        assert len(proxy_processes_for(pid)) == 1, pid
    assert sorted(p.name for p in state_dir.iterdir() if p.name in fresh) == sorted(fresh)

    # 9. every lifecycle and lease event was seen by a plain NATS subscriber
    expected = {
        "proxy.pending",
        "proxy.provisioning",
        "proxy.booting",
        "proxy.ready",
        "proxy.unhealthy",
        "proxy.deleting",
        "proxy.deleted",
        "lease.granted",
        "lease.released",
        "lease.reported",
        "lease.revoked",
    }
    wait_for("events", lambda: expected <= set(events), timeout=5)
