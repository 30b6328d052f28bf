"""A grant race over exit addresses across two real API processes and the gateway (real
Squids behind it): two proxies that leave through one address are never held at once.

Eight proxies on four addresses (two per address, `ip` exclusivity, the default). Workers
grant through either API replica or open tunnels through the gateway, hold a moment and
let go; meanwhile a Lua snapshot of the active leases (atomic, so it sees one instant of
the store) counts leases sharing an exit address, thousands of times."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import httpx
import redis.asyncio as aioredis
from tests.api.helpers import CLIENT, CLIENT_NAME, PROVIDERS_YAML
from tests.api.procs import api_process, wait_ready
from tests.conftest import TargetServer
from tests.gateway.conftest import StartGateway, connect_head, raw_request, ready_proxy
from tests.health.conftest import ProxyProcess

from proxyfleet.common.domain.egress import network
from proxyfleet.common.store import ProxyRegistry

ADDRESSES = ["127.0.11.1", "127.0.11.2", "127.0.12.1", "127.0.12.2"]
WORKERS = 60
ROUNDS = 15

# One instant of the store: active leases, and how many share an exit address with an
# earlier one of them.
SNAPSHOT = """
local ids = redis.call('ZRANGE', 'pf:leases', 0, -1)
local seen, doubles = {}, 0
for _, id in ipairs(ids) do
  local ip = redis.call('HGET', 'pf:lease:' .. id, 'egress_ip')
  if ip and ip ~= '' then
    if seen[ip] then doubles = doubles + 1 else seen[ip] = true end
  end
end
return {#ids, doubles}
"""


async def test_no_exit_address_is_held_twice_across_apis_and_the_gateway(
    tmp_path: Path,
    start_gateway: StartGateway,
    gw_squids: list[ProxyProcess],
    registry: ProxyRegistry,
    redis_client: aioredis.Redis,
    redis_url: str,
    nats_url: str,
    target: TargetServer,
) -> None:
    for i, ip in enumerate(ADDRESSES * 2):
        pid = await ready_proxy(registry, gw_squids[i % len(gw_squids)].port)
        await registry.update(pid, egress_ip=ip, egress_net=network(ip))
    cfg = tmp_path / "providers.yaml"
    cfg.write_text(PROVIDERS_YAML)
    args = [
        "--redis-url", redis_url, "--nats-url", nats_url, "--providers-config", str(cfg),
        "--cooldown", "0", "--max-probe-age", "3600", "--sweep-interval", "0.1",
        "--log-level", "warning",
    ]  # fmt: skip
    env = {"PROXYFLEET_CLIENT_TOKENS": f"{CLIENT_NAME}:{CLIENT}",
           "PROXYFLEET_ADMIN_TOKENS": "adm:adm-secret-for-tests-only"}  # fmt: skip
    gw = await start_gateway(cooldown=0.0)
    snapshot = redis_client.register_script(SNAPSHOT)
    outcomes: Counter[str] = Counter()
    samples = doubles = most_active = 0
    racing = True

    async def watch() -> None:
        nonlocal samples, doubles, most_active
        while racing:
            active, shared = await snapshot()
            samples, doubles = samples + 1, doubles + int(shared)
            most_active = max(most_active, int(active))

    with ExitStack() as stack:
        logs = [tmp_path / f"api{i}.log" for i in range(2)]
        urls = [stack.enter_context(api_process(args, env, log)) for log in logs]
        await asyncio.gather(*(wait_ready(u, log) for u, log in zip(urls, logs, strict=True)))
        headers = {"Authorization": f"Bearer {CLIENT}"}
        apis = [httpx.AsyncClient(base_url=u, headers=headers, timeout=30) for u in urls]

        async def through_api(rng: random.Random) -> None:
            api = apis[rng.randrange(2)]
            r = await api.post("/v1/leases", json={"ttl": 5})
            outcomes[f"api {r.status_code}"] += 1
            if r.status_code != 201:
                assert r.status_code == 503, r.text
                await asyncio.sleep(rng.uniform(0, 0.01))  # then try again
                return
            body = r.json()
            await asyncio.sleep(rng.uniform(0, 0.02))
            rel = await apis[rng.randrange(2)].post(
                f"/v1/leases/{body['lease_id']}/release", json={"epoch": body["epoch"]}
            )
            assert rel.status_code == 200, rel.text

        async def through_gateway(rng: random.Random) -> None:
            tunnel = await raw_request(gw.port, connect_head(f"127.0.0.1:{target.port}"))
            outcomes[f"gateway {tunnel.status}"] += 1
            assert tunnel.status in (200, 503), tunnel.head
            await asyncio.sleep(rng.uniform(0, 0.02 if tunnel.status == 200 else 0.01))
            tunnel.close()

        async def worker(i: int) -> None:
            rng = random.Random(i)
            for _ in range(ROUNDS):
                await (through_gateway if i % 2 == 0 else through_api)(rng)

        watcher = asyncio.create_task(watch())
        try:
            await asyncio.gather(*(worker(i) for i in range(WORKERS)))
        finally:
            racing = False
            await watcher
            for api in apis:
                await api.aclose()

    seen = (samples, doubles, most_active, outcomes)
    assert doubles == 0, seen
    assert samples > 20, seen
    assert most_active == len(ADDRESSES), seen  # every address was busy at once
    # Both ways in were granted, addresses were granted again, and some grants waited.
    assert outcomes["api 201"] > 0, seen
    assert outcomes["gateway 200"] > 0, seen
    assert outcomes["api 201"] + outcomes["gateway 200"] > 2 * len(ADDRESSES), seen
    assert outcomes["api 503"] + outcomes["gateway 503"] > 0, seen
