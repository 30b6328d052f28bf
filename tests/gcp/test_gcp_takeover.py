"""Two provisioner-gcp processes on the fake GCE, with the runner's default ack-wait: one is
SIGKILLed while its creates wait on Compute, and the other finishes them within seconds by
adopting the instances they made (no second insert); meanwhile its own creates, each held
longer than the ack-wait in a blocking SDK call, are heartbeated and never handed out again.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import yaml
from tests.gcp.fake_gce import FakeGce
from tests.gcp.gcp_provider import ZONES, instances_of
from tests.provisioner.helpers import wait_until
from tests.takeover import (
    HANDLED,
    Busy,
    ProvisionerProcesses,
    all_in_phase,
    hand_over,
    kill_while_handling,
    registry_on,
)

from proxyfleet.common.wire.models import Phase
from proxyfleet.provisioner_gcp.settings import GcpProvisionerSettings

SCRIPT = str(Path(sys.executable).parent / "proxyfleet-provisioner-gcp")
PROVIDER = "gcptakeover"
SLOTS = 4
"""Creates the killed replica holds, and as many again the other one holds of its own."""
TAKEOVER_WITHIN = 20.0
"""Seconds from the SIGKILL to the last of its creates finished: a few ack-waits."""
ACK_WAIT = GcpProvisionerSettings(provider=PROVIDER).ack_wait


def write_config(path: Path, fake: FakeGce) -> Path:
    entry = {
        "name": PROVIDER,
        "type": "gcp",
        "zones": ["us-a", "us-b"],
        "gcp": {
            "project": fake.project,
            "zones": {"us-a": ZONES["us-a"], "us-b": ZONES["us-b"]},
            "source_ranges": ["127.0.0.0/8"],
            "api_endpoint": fake.endpoint,
            "anonymous": True,
        },
    }
    path.write_text(yaml.safe_dump({"providers": [entry]}))
    return path


def adopted_by(log: str) -> list[str]:
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    return [line["proxy_id"] for line in lines if line.get("event") == "gcp.instance_adopted"]


async def test_a_killed_replicas_creates_are_finished_by_the_other_within_seconds(
    fake_gce: FakeGce, redis_url: str, nats_url: str, tmp_path: Path
) -> None:
    fake_gce.settings.boot = False  # no Squid: the registry says when a create is done
    # Operations are DONE at once; Compute's answers to the waits on them are late: in the
    # victim's zone until past the kill, in the survivor's for longer than an ack-wait.
    fake_gce.inject("zoneOperations.wait", "delay", None, ZONES["us-a"], seconds=30)
    fake_gce.inject("zoneOperations.wait", "delay", SLOTS, ZONES["us-b"], seconds=ACK_WAIT + 3)
    config = write_config(tmp_path / "providers.yaml", fake_gce)

    def waiting_on_compute(count: int) -> Busy:
        async def check(_: list[str]) -> bool:
            return fake_gce.calls.get("zoneOperations.wait", 0) >= count

        return check

    async with registry_on(redis_url, 8) as (registry, url):
        argv = [SCRIPT, "--provider", PROVIDER, "--providers-config", str(config)]
        argv += ["--nats-url", nats_url, "--redis-url", url]
        argv += ["--installation-id", "gcp-takeover", "--log-format", "json"]
        with ProvisionerProcesses(argv, tmp_path) as replicas:
            victim = await asyncio.to_thread(replicas.start, "--concurrency", str(SLOTS))
            theirs, _ = await hand_over(
                victim, registry, PROVIDER, "us-a", SLOTS, waiting_on_compute(SLOTS)
            )
            # Slots to spare: the victim's intents need not wait for the survivor's own.
            survivor = await asyncio.to_thread(replicas.start, "--concurrency", str(2 * SLOTS))
            own, own_made = await hand_over(
                survivor, registry, PROVIDER, "us-b", SLOTS, waiting_on_compute(2 * SLOTS)
            )
            killed_at = await asyncio.to_thread(
                kill_while_handling, victim.metrics_url, victim.proc
            )
            await wait_until(
                lambda: all_in_phase(registry, theirs, Phase.BOOTING),
                TAKEOVER_WITHIN,
                "the killed replica's creates to be finished by the other",
            )
            took = time.monotonic() - killed_at
            print(f"\ntakeover: the killed replica's {SLOTS} creates done {took:.1f} s after it")
            await wait_until(
                lambda: all_in_phase(registry, own, Phase.BOOTING), 30, "its own creates"
            )
            own_took = time.monotonic() - own_made
            handled = await asyncio.to_thread(survivor.metric, HANDLED, kind="intent.create")
            log = survivor.log_text()

    assert own_took > ACK_WAIT  # only the heartbeats kept them from being handed out again
    assert handled == 2 * SLOTS  # every intent once on the survivor: its own never came back
    assert sorted(adopted_by(log)) == sorted(theirs)  # taken over, not made again
    every = theirs + own
    assert {p: len(instances_of(fake_gce, p)) for p in every} == dict.fromkeys(every, 1)
    assert fake_gce.calls["instances.insert"] == len(every)
