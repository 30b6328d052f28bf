"""Scaling by replicas, shown locally: three provisioners, three health replicas and two
APIs against one NATS and Redis share the work and never do any of it twice; a killed
provisioner's intents are finished by the others within seconds."""

from __future__ import annotations

import asyncio
import itertools
import os
import time

import httpx
import nats
import pytest
from tests.e2e.journey import Api, proxy_processes_for, wait_for
from tests.scaling.conftest import PROBE_INTERVAL
from tests.scaling.fleet import ProbeTap, Replicas
from tests.takeover import kill_while_handling, metric

from proxyfleet.common.runner import RunnerSettings
from proxyfleet.common.wire import subjects

WINDOW = float(os.environ.get("PROXYFLEET_SCALING_WINDOW", "24"))
"""Seconds over which the probe shares are measured (24 rounds of probes in `make test`;
bench/scaling.sh measures a minute)."""
PROXIES = int(os.environ.get("PROXYFLEET_SCALING_PROXIES", "48"))
"""Proxies whose probes are shared, created half through each API."""

pytestmark = pytest.mark.timeout(120 + WINDOW)
CREATES = "proxyfleet_provider_call_seconds_count"
PROBES = "proxyfleet_probes_total"


def create(api_urls: list[str], token: str, count: int) -> list[str]:
    """`count` proxies, half through each API."""
    ids: list[str] = []
    for url, n in zip(api_urls, (count - count // 2, count // 2), strict=True):
        r = Api(url, token).http.post("/v1/proxies", json={"provider": "local", "count": n})
        assert r.status_code == 202, r.text
        ids += [p["id"] for p in r.json()["items"]]
    return ids


def wait_ready(fleet: Replicas, ids: list[str], timeout: float) -> None:
    admin = Api(fleet.api_urls[0], fleet.stack.admin_token)

    def all_ready() -> bool:
        phases = {p["id"]: p["phase"] for p in admin.proxies(provider="local")}
        return all(phases.get(pid) == "ready" for pid in ids)

    wait_for(f"{len(ids)} proxies ready", all_ready, timeout=timeout)


def assert_one_process_each(ids: list[str]) -> None:
    counts = {pid: len(proxy_processes_for(pid)) for pid in ids}
    assert all(n == 1 for n in counts.values()), {k: n for k, n in counts.items() if n != 1}


async def grant_all(api_urls: list[str], token: str, attempts: int) -> list[httpx.Response]:
    """`attempts` grants at once, alternating between the APIs."""
    clients = [
        httpx.AsyncClient(base_url=u, headers={"Authorization": f"Bearer {token}"}, timeout=20)
        for u in api_urls
    ]
    try:
        calls = [
            c.post("/v1/leases", json={"ttl": 60, "holder": f"scale-{i}"})
            for i, c in zip(range(attempts), itertools.cycle(clients), strict=False)
        ]
        return list(await asyncio.gather(*calls))
    finally:
        for c in clients:
            await c.aclose()


def test_replicas_share_creates_probes_and_grants_and_do_nothing_twice(
    replicas: Replicas,
) -> None:
    fleet = replicas
    creates_before = {
        p: metric(fleet.metrics_url(p), CREATES, op="create", result="ok")
        for p in fleet.provisioners
    }
    ids = create(fleet.api_urls, fleet.stack.admin_token, PROXIES)
    wait_ready(fleet, ids, timeout=40)

    # creates: split between the provisioners, each proxy one process
    creates = {
        p: metric(fleet.metrics_url(p), CREATES, op="create", result="ok") - creates_before[p]
        for p in fleet.provisioners
    }
    print("creates by provisioner:", creates)
    assert sum(creates.values()) == len(ids)
    assert all(n > 0 for n in creates.values()), creates
    assert_one_process_each(ids)

    # probes: each health replica's share within 20 % of the others', none twice at once
    with ProbeTap(fleet.stack.nats_url) as tap:
        time.sleep(1.0)  # subscribed before the window opens
        start = time.time()
        before = {h: metric(fleet.metrics_url(h), PROBES) for h in fleet.healths}
        time.sleep(WINDOW)
        made = {h: metric(fleet.metrics_url(h), PROBES) - before[h] for h in fleet.healths}
        probes = tap.since(start, set(ids))
    total = sum(made.values())
    shares = {h: round(n / total, 3) for h, n in made.items()}
    gaps = [b - a for times in probes.values() for a, b in itertools.pairwise(times)]
    print(f"probes by health replica over {WINDOW:g} s:", made, "shares:", shares)
    print(f"probe gaps of one proxy: min {min(gaps):.3f} s, max {max(gaps):.3f} s")
    for h in fleet.healths:
        assert metric(fleet.metrics_url(h), "proxyfleet_health_replicas") == len(fleet.healths)
    assert max(made.values()) <= 1.2 * min(made.values()), shares
    # every proxy probed about once an interval, never twice within one: a claim late by
    # up to a jittered tick (0.3 s) is followed by one on time
    assert all(len(t) >= WINDOW / PROBE_INTERVAL * 0.7 for t in probes.values())
    assert min(gaps) > PROBE_INTERVAL - 0.5

    # grants: twice as many at once as there are proxies, through both APIs
    responses = asyncio.run(grant_all(fleet.api_urls, fleet.stack.client_token, 2 * len(ids)))
    granted = [r.json() for r in responses if r.status_code == 201]
    assert {r.status_code for r in responses} <= {201, 503}, [r.text for r in responses][:3]
    held = [g["proxy"]["id"] for g in granted]
    print(f"grants: {len(granted)} of {len(responses)}, distinct proxies {len(set(held))}")
    assert len(set(held)) == len(held)  # never two active leases on one proxy
    assert set(ids) <= set(held)  # and every ready proxy was granted once
    client = Api(fleet.api_urls[0], fleet.stack.client_token)
    for g in granted:
        client.http.post(f"/v1/leases/{g['lease_id']}/release", json={"epoch": g["epoch"]})


async def unacked_intents(nats_url: str) -> int:
    nc = await nats.connect(nats_url)
    try:
        info = await nc.jetstream().consumer_info(
            subjects.INTENT_STREAM, subjects.provisioner_durable("local")
        )
        return int(info.num_ack_pending)
    finally:
        await nc.close()


def test_a_killed_provisioners_intents_are_finished_by_the_others_within_seconds(
    replicas: Replicas,
) -> None:
    fleet = replicas
    victim = fleet.provisioners[-1]
    admin = Api(fleet.api_urls[0], fleet.stack.admin_token)
    ids = create(fleet.api_urls, fleet.stack.admin_token, 30)
    proc = fleet.stack.processes[victim]
    killed_at = kill_while_handling(fleet.metrics_url(victim), proc)
    try:
        time.sleep(1.5)  # the others finish theirs; the victim's stay unacked
        held = asyncio.run(unacked_intents(fleet.stack.nats_url))
        print(f"intents held by the killed {victim}: {held}")

        def provisioned() -> bool:
            phases = admin.phases(ids)
            return all(ph in {"booting", "ready"} for ph in phases.values())

        ack_wait = RunnerSettings(provider="local").ack_wait
        wait_for("every create to be finished", provisioned, timeout=ack_wait + 15)
        took = time.monotonic() - killed_at
        print(f"takeover: every create finished {took:.1f} s after the SIGKILL")
        assert held >= 1  # the kill did catch intents in flight
        wait_ready(fleet, ids, timeout=30)
        assert_one_process_each(ids)
    finally:
        fleet.restart(victim)
