"""Two real API processes, one Redis, one NATS, ~400 concurrent grants on 5 proxies:
no proxy is ever held by two active leases at once."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections import defaultdict
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import redis.asyncio as aioredis
from tests.api.helpers import PROVIDER, PROVIDERS_YAML
from tests.api.procs import api_process, wait_ready

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Phase, Proxy

PROXIES = 5
WORKERS = 400
ATTEMPTS = 1


@dataclass(frozen=True)
class Granted:
    lease_id: str
    proxy_id: str
    epoch: int
    via: int


async def seed(client: aioredis.Redis) -> None:
    registry = ProxyRegistry(client, SystemClock())
    for i in range(PROXIES):
        now = SystemClock().now()
        pid = f"pc{i}"
        await registry.create(
            Proxy(
                id=pid,
                provider=PROVIDER,
                zone="z1",
                phase=Phase.PENDING,
                gen=0,
                username="u",
                password="p",
                created_at=now,
                updated_at=now,
            )
        )
        await registry.transition(pid, Phase.PROVISIONING)
        await registry.transition(pid, Phase.BOOTING, host="127.0.0.1", port=3128 + i)
        await registry.transition(pid, Phase.READY, last_ok_at=now)


async def test_no_proxy_is_ever_leased_twice_across_two_api_processes(
    tmp_path: Path, redis_client: aioredis.Redis, redis_url: str, nats_url: str
) -> None:
    cfg = tmp_path / "providers.yaml"
    cfg.write_text(PROVIDERS_YAML)
    args = [
        "--redis-url", redis_url,
        "--nats-url", nats_url,
        "--providers-config", str(cfg),
        "--cooldown", "0",
        "--max-probe-age", "3600",  # no health here: the seeded probe stays good
        "--sweep-interval", "0.1",
        "--log-level", "warning",
    ]  # fmt: skip
    adm1, adm2, cli1 = "adm-1-secret-for-tests", "adm-2-secret-for-tests", "cli-1-secret-for-tests"
    env = {
        "PROXYFLEET_ADMIN_TOKENS": f"adm1:{adm1},adm2:{adm2}",
        "PROXYFLEET_CLIENT_TOKENS": f"cli1:{cli1}",
    }
    await seed(redis_client)

    with ExitStack() as stack:
        logs = [tmp_path / f"api{i}.log" for i in range(2)]
        urls = [stack.enter_context(api_process(args, env, log)) for log in logs]
        await asyncio.gather(*(wait_ready(u, log) for u, log in zip(urls, logs, strict=True)))
        limits = httpx.Limits(max_connections=50)
        clients = [
            httpx.AsyncClient(
                base_url=u, headers={"Authorization": f"Bearer {tok}"}, limits=limits, timeout=30
            )
            for u, tok in zip(urls, (cli1, adm2), strict=True)
        ]
        granted: list[Granted] = []
        statuses: dict[int, int] = defaultdict(int)

        async def worker(i: int) -> None:
            rng = random.Random(i)
            for _ in range(ATTEMPTS):
                via = rng.randrange(2)
                ttl = rng.choice([0.2, 0.5])
                r = await clients[via].post("/v1/leases", json={"ttl": ttl, "holder": f"w{i}"})
                statuses[r.status_code] += 1
                if r.status_code == 503:
                    assert int(r.headers["retry-after"]) >= 1
                    await asyncio.sleep(rng.uniform(0.01, 0.2))
                    continue
                assert r.status_code == 201, r.text
                body = r.json()
                granted.append(Granted(body["lease_id"], body["proxy"]["id"], body["epoch"], via))
                if i % 2:  # half the holders release early, through either process
                    await asyncio.sleep(rng.uniform(0, 0.05))
                    other = clients[rng.randrange(2)]
                    rel = await other.post(  # as its holder: another token's lease is 404
                        f"/v1/leases/{body['lease_id']}/release",
                        json={"epoch": body["epoch"]},
                        headers=clients[via].headers,
                    )
                    assert rel.status_code in (200, 409), rel.text  # 409: expired meanwhile
                return

        try:
            await asyncio.gather(*(worker(i) for i in range(WORKERS)))
            # Every lease ends (released, or expired by either sweeper).
            for _ in range(100):
                if await redis_client.zcard("pf:leases") == 0:
                    break
                await asyncio.sleep(0.1)
            assert await redis_client.zcard("pf:leases") == 0
        finally:
            for c in clients:
                await c.aclose()

    assert set(statuses) <= {201, 503}, statuses
    assert len(granted) > 2 * PROXIES, statuses  # real contention: proxies were re-granted
    assert statuses[503] > 0
    assert {g.via for g in granted} == {0, 1}
    assert len({g.lease_id for g in granted}) == len(granted)
    assert len({(g.proxy_id, g.epoch) for g in granted}) == len(granted)

    by_proxy: dict[str, list[Granted]] = defaultdict(list)
    for g in granted:
        by_proxy[g.proxy_id].append(g)
    for pid, grants in by_proxy.items():
        grants.sort(key=lambda g: g.epoch)
        # Epochs per proxy strictly grow (a hybrid-logical clock: not contiguous), none doubled.
        epochs = [g.epoch for g in grants]
        assert all(a < b for a, b in itertools.pairwise(epochs)), pid
        # Lease k ended before lease k+1 began: never two active leases on one proxy.
        spans = []
        for g in grants:
            h = await redis_client.hgetall(f"pf:lease:{g.lease_id}")
            assert h["state"] in ("released", "expired"), h
            spans.append((float(h["granted_at"]), float(h["ended_at"])))
        for (start, end), (next_start, _) in itertools.pairwise(spans):
            assert start <= end <= next_start, (pid, spans)
