"""Pools end to end, as real processes on loopback (issue 20, "Tests and figures"): members
whose Squid dies or that are deleted come back, a full recycle under grant load never drops
the ready count below the size, autoscale follows 503s up and idleness down, quarantine by
outcomes, the controller replica holding a pool killed mid-recycle, a Redis reset without
persistence. One fleet for the module; every wait bounded; each scenario prints its
figures (`pytest -s` shows them)."""

from __future__ import annotations

import os
import signal
import time

import msgspec
from tests.faults.load import Load
from tests.pools.e2e.fleet import CONFIG_POOL, CONFIG_POOL_SIZE, PoolFleet, figure
from tests.pools.e2e.pools import (
    AUTO,
    AUTO_SPEC,
    KILL,
    KILL_SPEC,
    MAIN,
    MAIN_SPEC,
    QUAR,
    QUAR_SPEC,
    RECYCLE_AGE,
    Pressure,
)
from tests.pools.e2e.sampler import Sampler

from proxyfleet.common.domain.pool_spec import POOL_LABEL


def test_killed_squids_and_deleted_members_come_back(fleet: PoolFleet) -> None:
    fleet.ensure(MAIN, MAIN_SPEC, 90)
    size = MAIN_SPEC.size or 0
    victims = sorted(m.id for m in fleet.members(MAIN) if m.in_rotation)[:5]
    pids = {v: fleet.squid_pid(v) for v in victims}
    with Sampler(fleet, MAIN) as sampled:
        killed_at = time.time()
        for pid in pids.values():
            os.killpg(pid, signal.SIGKILL)
        took = fleet.wait(
            "the killed members serving again and the pool full",
            lambda: (
                all(fleet.serves_again(v, pids[v], killed_at) for v in victims)
                and fleet.ready_in_rotation(MAIN) >= size
            ),
            30,
        )
    live = fleet.live(MAIN)
    assert set(victims) <= live, "a killed member was replaced, not restarted"
    assert len(live) == size, f"{len(live)} members, expected {size}"
    figure(
        "kill -9 5 Squids",
        f"{size} ready again after {took:.1f}s (lowest ready in rotation "
        f"{sampled.lowest('ready')}); the same 5 ids on new Squid pids: provisioner-local's "
        "supervisor restarted them on their ports, the pool created nothing",
    )
    victims = sorted(m.id for m in fleet.members(MAIN) if m.in_rotation)[:5]
    before = fleet.live(MAIN)
    t0 = time.monotonic()
    for v in victims:
        r = fleet.admin.delete(f"/v1/proxies/{v}")
        assert r.status_code == 202, r.text
    fleet.wait(
        "the deleted members replaced",
        lambda: not set(victims) & fleet.live(MAIN) and fleet.ready_in_rotation(MAIN) >= size,
        45,
    )
    took = time.monotonic() - t0
    # Replaced is not gone: until the provisioner deleted them they are `deleting` with their
    # Squids up, and a Redis reset next (the reset scenario) would lose their entries and
    # tombstones, so re-adoption would bring them back as 5 members over the pool's size.
    fleet.wait(
        "the deleted members' Squids gone",
        lambda: all(fleet.proxy(v).get("phase") == "deleted" for v in victims),
        30,
    )
    assert len(fleet.live(MAIN) - before) == 5
    assert len(fleet.live(MAIN)) == size
    figure(
        "delete 5 members through the API",
        f"{size} ready again {took:.1f}s after the deletes were sent; 5 new "
        "members: the pool controller replaced them",
    )


def test_a_full_recycle_under_grant_load_keeps_size_ready(fleet: PoolFleet) -> None:
    fleet.ensure(MAIN, MAIN_SPEC, 90)
    size, surge = MAIN_SPEC.size or 0, MAIN_SPEC.max_surge
    originals = fleet.live(MAIN)
    selector: dict[str, object] = {"pool": MAIN}
    sticky = fleet.client.post("/v1/leases", json={"ttl": 120, "holder": "sticky", **selector})
    assert sticky.status_code == 201, sticky.text
    sticky_lease, sticky_proxy = sticky.json()["lease_id"], sticky.json()["proxy"]["id"]
    load = Load([fleet.stack.api_url], fleet.stack.client_token, clients=4, selector=selector)
    with Sampler(fleet, MAIN) as sampled, load:
        fleet.apply(MAIN, msgspec.structs.replace(MAIN_SPEC, max_age=RECYCLE_AGE))
        took = fleet.wait(
            "every original member recycled",
            lambda: not originals & fleet.live(MAIN) and fleet.ready_in_rotation(MAIN) >= size,
            100,
        )
        fleet.apply(MAIN, MAIN_SPEC)  # no more recycling: the new ones would age too
    assert sampled.errors == 0
    assert len(sampled.samples) >= 5 * took  # at least half the intended 10 a second
    cut = [lease for lease in load.leases if lease.release_status != 200]
    grants = [q for q in load.requests if q.op == "grant"]
    answer = fleet.client.get(f"/v1/leases/{sticky_lease}")
    assert answer.status_code == 200, (answer.status_code, answer.text)  # once seen not a lease
    lease = answer.json()
    held_for = float(fleet.r.hget(f"pf:lease:{sticky_lease}", "ended_at") or 0) - float(
        fleet.proxy(sticky_proxy).get("withheld_at") or 0
    )
    figure(
        "full recycle of 20 under load",
        f"{took:.1f}s; lowest ready in rotation {sampled.lowest('ready')} (size {size}), "
        f"lowest ready-and-free {sampled.lowest('free')}, most live members "
        f"{sampled.highest('live')} (size + max_surge {size + surge}), "
        f"{len(sampled.samples)} samples; {len(load.leases)} leases released, {len(cut)} "
        f"cut short, {sum(q.status != 201 for q in grants)} of {len(grants)} grants refused; "
        f"the long lease revoked {held_for:.1f}s after its drain (drain_timeout "
        f"{MAIN_SPEC.drain_timeout:g}s), reason {lease.get('reason')!r}",
    )
    assert sampled.lowest("ready") >= size
    assert sampled.highest("live") <= size + surge
    assert not cut, f"leases cut before their end: {cut[:3]}"
    assert (lease["state"], lease["reason"]) == ("revoked", "recycled")
    assert held_for >= MAIN_SPEC.drain_timeout


def test_autoscale_follows_refused_grants_up_and_idleness_down(fleet: PoolFleet) -> None:
    fleet.ensure(AUTO, AUTO_SPEC, 60)
    a = AUTO_SPEC.autoscale
    assert a is not None
    pressure = Pressure(fleet, AUTO)
    t0 = time.monotonic()
    pressure.hold(a.max, 60)  # every member leased, then refused until the pool grew
    up = time.monotonic() - t0
    assert int(fleet.record(AUTO)["desired"]) == a.max
    seen = [s["autoscale"] for s in pressure.statuses if s.get("autoscale")]
    assert any(i["refused"] > 0 for i in seen), seen[-3:]
    decision = fleet.status(AUTO).get("last_decision") or {}
    assert decision.get("action") == "scale_up", fleet.status(AUTO)
    assert "refused" in decision["reason"]
    pressure.release()
    down = fleet.wait(
        f"pool {AUTO} back to {a.min} member",
        lambda: int(fleet.record(AUTO)["desired"]) == a.min and len(fleet.live(AUTO)) == a.min,
        60,
    )
    status = fleet.status(AUTO)
    decision = status.get("last_decision") or {}
    assert decision.get("action") == "scale_down", status
    assert "above max_free" in decision["reason"]
    figure(
        "autoscale",
        f"{a.min} -> {a.max} in {up:.1f}s under {pressure.refused} refused grants; back to "
        f"{a.min} {down:.1f}s after release (scale_down_after {a.scale_down_after:g}s); "
        f"last decision {decision['reason']!r}, inputs {status['autoscale']}",
    )
    fleet.delete_pool(AUTO)


def test_a_member_blocked_by_enough_targets_is_quarantined_and_released(
    fleet: PoolFleet,
) -> None:
    fleet.ensure(QUAR, QUAR_SPEC, 60)
    rule, size = QUAR_SPEC.quarantine, QUAR_SPEC.size or 0
    assert rule is not None
    victim = next(m.id for m in fleet.members(QUAR) if m.in_rotation)
    r = fleet.client.post("/v1/leases", json={"proxy_id": victim, "ttl": 30})
    assert r.status_code == 201, r.text
    lease, epoch = r.json()["lease_id"], r.json()["epoch"]
    for i in range(rule.blocked_targets):
        body = {"epoch": epoch, "outcome": "blocked", "target": f"t{i}.example"}
        assert fleet.client.post(f"/v1/leases/{lease}/report", json=body).status_code == 200
    assert fleet.client.post(f"/v1/leases/{lease}/release", json={"epoch": epoch}).is_success
    took = fleet.wait(
        "the member quarantined", lambda: fleet.proxy(victim).get("withheld") == "quarantined", 10
    )
    fleet.wait(f"{size} ready besides it", lambda: fleet.ready_in_rotation(QUAR) >= size, 30)
    fleet.passes(QUAR, 3)  # the pool leaves it alone, pass after pass
    assert fleet.proxy(victim)["phase"] == "ready"
    assert fleet.status(QUAR)["quarantined"] == 1
    r = fleet.client.post("/v1/leases", json={"proxy_id": victim, "ttl": 30})
    assert (r.status_code, r.json()["error"]) == (409, "proxy_quarantined")
    granted = {fleet.grant_and_release({"labels": {POOL_LABEL: QUAR}}) for _ in range(2 * size)}
    assert granted - {""}
    assert victim not in granted
    assert fleet.release_quarantined(victim)
    again = []
    for _ in range(3):  # its blocked reports are still recent: they must no longer count
        fleet.passes(QUAR, 1)
        again.append(fleet.proxy(victim).get("withheld", ""))
    assert "quarantined" not in again, f"quarantined again after its release: {again}"
    fleet.wait(
        f"pool {QUAR} back to {size} members",
        lambda: len(fleet.live(QUAR)) == size and fleet.ready_in_rotation(QUAR) == size,
        30,
    )
    figure(
        "quarantine by outcomes",
        f"quarantined {took:.1f}s after blocked reports from {rule.blocked_targets} targets, "
        f"replaced, never granted ({len(granted - {''})} members granted meanwhile), kept "
        f"ready; released back, then the pool's surplus retired: {size} members",
    )
    fleet.delete_pool(QUAR)


def test_a_replica_killed_mid_recycle_the_other_finishes_it(fleet: PoolFleet) -> None:
    fleet.ensure(KILL, KILL_SPEC, 60)
    size, surge = KILL_SPEC.size or 0, KILL_SPEC.max_surge
    originals = fleet.live(KILL)
    with Sampler(fleet, KILL) as sampled:
        fleet.apply(KILL, msgspec.structs.replace(KILL_SPEC, max_age=RECYCLE_AGE))
        fleet.wait(
            "the recycle's first batch done",
            lambda: len(originals & fleet.live(KILL)) <= size - surge,
            60,
        )
        holder = fleet.lock_holder(KILL)
        victim = fleet.replica_of(holder)
        fleet.kill9(victim)
        killed_at, gone_then = time.monotonic(), len(originals - fleet.live(KILL))
        took_over = fleet.wait(
            "another replica holding the pool",
            lambda: fleet.lock_holder(KILL) not in ("", holder),
            15,
        )
        fleet.wait(
            "the recycle finished",
            lambda: not originals & fleet.live(KILL) and fleet.ready_in_rotation(KILL) >= size,
            60,
        )
        finished = time.monotonic() - killed_at
        fleet.apply(KILL, KILL_SPEC)
    fleet.restart(victim)
    ever = fleet.ever_in_pool(KILL)
    ages = sorted(
        (p["phase"], float(p["updated_at"]) - float(p["created_at"])) for p in ever.values()
    )
    departed = [age for phase, age in ages if phase in ("deleting", "deleted")]
    recycled = [age for age in departed if age >= RECYCLE_AGE * 0.9]  # none young
    figure(
        "replica killed mid-recycle",
        f"{victim} killed with {gone_then} of {size} recycled; the other held the pool "
        f"{took_over:.1f}s later and finished {finished:.1f}s after the kill; {len(ever)} "
        f"members ever created = size {size} + {len(recycled)} recycled; most live "
        f"{sampled.highest('live')} (size + max_surge {size + surge}), lowest ready "
        f"{sampled.lowest('ready')}",
    )
    assert 0 < gone_then < size
    assert len(ever) == size + len(recycled), ages
    assert len(departed) == len(recycled), ages
    assert sampled.highest("live") <= size + surge
    assert sampled.lowest("ready") >= size
    fleet.delete_pool(KILL)


def test_a_redis_reset_brings_config_pools_back_full_without_doubling(
    fleet: PoolFleet,
) -> None:
    size = CONFIG_POOL_SIZE
    fleet.wait(f"pool {CONFIG_POOL} full", lambda: fleet.ready_in_rotation(CONFIG_POOL) >= size, 60)
    before = fleet.live(CONFIG_POOL)
    fleet.redis.kill()
    fleet.redis.wipe()
    fleet.redis.start()
    with Sampler(fleet, CONFIG_POOL) as sampled:
        back = fleet.wait("the pool declared again", lambda: fleet.record(CONFIG_POOL), 30)
        full = fleet.wait(
            f"pool {CONFIG_POOL} full again",
            lambda: fleet.ready_in_rotation(CONFIG_POOL) >= size,
            60,
        )
        fleet.passes(CONFIG_POOL, 3)
    after = fleet.live(CONFIG_POOL)
    created = set(fleet.ever_in_pool(CONFIG_POOL)) - before
    figure(
        "redis reset without persistence",
        f"pool {CONFIG_POOL} declared again {back:.1f}s after Redis came back empty, {size} "
        f"ready again {full:.1f}s after that; members {len(after)} ({len(after & before)} "
        f"re-adopted), {len(created)} created, most live {sampled.highest('live')}",
    )
    assert after == before
    assert not created
    assert sampled.highest("live") <= size
