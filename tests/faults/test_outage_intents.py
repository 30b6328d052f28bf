"""Intents written during a NATS outage reach the provisioner through the outbox.

The fault suite's `nats down` row once read as if a delete asked for in the outage waited
for the provisioner's reconciler: the proxy was deleted about 3 s after NATS came back,
right after `reconciler.intent_republished`. Here the reconciler cannot republish anything
(`--stale-after` of an hour), so whatever is done after the outage came from the API's
outbox, relayed once NATS is back: a create, the delete of a proxy still pending and the
delete of a ready one (its Squid stops gracefully, which takes Squid about 3 s with
`shutdown_lifetime 1 seconds`, outage or not: docs/reliability.md).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from tests.faults.harness import Fleet

WITHIN = 30.0
"""Bound on each wait (they take well under 5 s)."""


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        return False
    return True


@pytest.fixture
def fleet() -> Iterator[Fleet]:
    f = Fleet(proxies=1)
    args = f.stack.opts.extra_args["provisioner"]
    args[args.index("--stale-after") + 1] = "3600"  # no reconciler republish in this test
    try:
        f.start()
        yield f
    finally:
        f.close()


@pytest.mark.timeout(240)
def test_intents_from_an_outage_are_done_through_the_outbox(fleet: Fleet) -> None:
    (victim,) = (i for i, p in fleet.registry().items() if p["phase"] == "ready")
    port = int(fleet.registry()[victim]["port"])
    assert _listening(port)
    fleet.wait("the outbox drained", lambda: fleet.outbox.length() == 0, WITHIN)

    fleet.nats.kill()
    r = fleet.admin.post("/v1/proxies", json={"provider": "local", "count": 2})
    assert r.status_code == 202, r.text
    fresh, doomed = (p["id"] for p in r.json()["items"])
    for proxy_id in (victim, doomed):
        r = fleet.admin.delete(f"/v1/proxies/{proxy_id}", params={"force": "true"})
        assert r.status_code == 202, r.text
    assert fleet.outbox.length() > 0  # held while NATS is away
    assert fleet.registry()[fresh]["phase"] == "pending"
    fleet.nats.start()

    def phase(proxy_id: str) -> str:
        return str(fleet.registry().get(proxy_id, {}).get("phase"))

    fleet.wait("the create done", lambda: phase(fresh) in ("booting", "ready"), WITHIN)
    fleet.wait("the pending proxy deleted", lambda: phase(doomed) == "deleted", WITHIN)
    fleet.wait("the ready proxy's Squid stopping", lambda: not _listening(port), WITHIN)
    fleet.wait("the ready proxy deleted", lambda: phase(victim) == "deleted", WITHIN)
    assert fleet.resources().get(victim, 0) == 0

    # The phase and its event are written together, but the event reaches the stream only
    # when the relay has published it: read the stream once what was written is published.
    assert fleet.outbox.published(fleet.outbox.mark()) == []
    deleted = [e.proxy_id for e in fleet.events() if e.type == "proxy.deleted"]
    assert sorted(deleted) == sorted([victim, doomed])
    log = (fleet.base / "logs" / "provisioner.log").read_text(errors="replace")
    assert "reconciler.intent_republished" not in log
