"""Issue 23 end to end: a static provider reads a pasted list of 50 proxies (socks5,
socks5h, https, http in every format, vendor sessions), all real upstreams on loopback,
each with an exit address of its own; the whole system runs as processes. While clients
grant and release through the API and tunnel through the gateway, the list is edited
(lines removed, some of them leased; lines added; a broken line) and the provisioner gets
SIGHUP. No lease is lost, removed proxies drain and are then forgotten, added ones become
ready, the broken line is reported by number, unchanged ones keep their state, and no
upstream credential reaches a gateway client or any log line."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from tests.e2e.journey import Api, wait_for
from tests.e2e.static_load import ApiLoad, GatewayLoad
from tests.e2e.static_stack import (
    PROVIDER,
    PROVISIONER,
    SOURCE,
    Events,
    log_files,
    metric_lines,
    static_stack,
)
from tests.e2e.static_upstreams import Entry, Upstreams, running_upstreams

from proxyfleet.devstack.stack import Stack
from proxyfleet.provisioner_static.pure.lines import entry_id, parse_line

pytestmark = pytest.mark.timeout(240)

DB = 14
"""A Redis database no other end-to-end test uses."""
REMOVED = [0, 1, 8, 14, 30, 31]
"""Indexes of the first list's lines the edit removes: socks5, socks5h, https, http,
two vendor sessions."""
HELD_REMOVED = [0, 30]
"""Removed ones leased across the edit (by a client other than the loops)."""
HELD_KEPT = 20
SCHEMES = ("http", "https", "socks5", "socks5h")
REJECTED_METRIC = "proxyfleet_static_entries_rejected_total"
BROKEN_AT = 12
"""The line number of the broken line in the edited file."""
BROKEN_PASSWORD = "pw-broken-line"
BROKEN = f"socks5://brk:{BROKEN_PASSWORD}@127.0.0.1:99999"
"""A port out of range, with a password that must not be shown either."""


def proxy_id(entry: Entry) -> str:
    line = parse_line(entry.line)
    assert line is not None
    return entry_id(PROVIDER, line)


def exits(up: Upstreams) -> dict[str, str]:
    """Each entry's proxy id -> the exit address the echo target should see through it."""
    sessions = up.vendor.sessions()
    return {
        proxy_id(e): e.exit or (sessions[e.session].exit_address if e.session in sessions else "")
        for e in (*up.first, *up.spare)
    }


def ready(admin: Api, ids: list[str]) -> bool:
    return all(p == "ready" for p in admin.phases(ids).values())


def registered_to_ready(events: Events, ids: list[str]) -> float:
    """Seconds from the first proxy.pending of `ids` to the last first proxy.ready."""
    first: dict[tuple[str, str], float] = {}
    for b in events.all():
        first.setdefault((b["type"], b["proxy_id"]), b["time"])
    pending = min(first[("proxy.pending", pid)] for pid in ids)
    return max(first[("proxy.ready", pid)] for pid in ids) - pending


def hold(client: Api, pid: str) -> dict[str, Any]:
    """A lease on `pid`, once the loops leave it free."""

    def grant() -> dict[str, Any] | None:
        r = client.http.post("/v1/leases", json={"proxy_id": pid, "ttl": 120, "holder": "held"})
        assert r.status_code in (201, 409, 503), r.text
        return dict(r.json()) if r.status_code == 201 else None

    return wait_for(f"a lease on {pid}", grant, timeout=20)


def edit(listing: Path, kept: list[Entry], added: list[Entry]) -> None:
    """The list without the removed lines, a broken line at BROKEN_AT, the added lines at
    the end; written whole (the provisioner never reads half a file)."""
    lines = [e.line for e in kept[: BROKEN_AT - 1]] + [BROKEN]
    lines += [e.line for e in kept[BROKEN_AT - 1 :]] + [e.line for e in added]
    staged = listing.with_suffix(".new")
    staged.write_text("".join(line + "\n" for line in lines))
    staged.replace(listing)


def drained(admin: Api, removed: list[str], leased: list[str]) -> bool:
    """Each removed proxy drained and still leased (`leased`), or forgotten (the others)."""
    now = {pid: admin.proxy(pid) for pid in removed}
    return all(
        (p["withheld"], p["leased"]) == ("draining", True)
        if pid in leased
        else p["phase"] == "deleted"
        for pid, p in now.items()
    )


def check_broken_line_reported(events: Events, metrics_port: int) -> None:
    def rejected() -> list[dict[str, Any]]:
        return [b for b in events.of_type("source.entry_rejected") if b.get("provider") == PROVIDER]

    reports = wait_for("the broken line reported", rejected, timeout=10)
    assert [(b["data"]["source"], b["data"]["line"]) for b in reports] == [(SOURCE, BROKEN_AT)]
    assert reports[0]["data"]["reason"].startswith("port out of range")
    labels = f'kind="port",provider="{PROVIDER}",source="{SOURCE}"'
    assert metric_lines(metrics_port, REJECTED_METRIC) == [f"{REJECTED_METRIC}{{{labels}}} 1.0"]


def check_no_lease_lost(
    api_load: ApiLoad, gw_load: GatewayLoad, events: Events, ours: set[str]
) -> None:
    """Every grant answered (a lease or none free), every release fine, every tunnel made
    through the first proxy it got; no lease of ours revoked or expired."""
    assert {g.status for g in api_load.grants} <= {201, 503}
    assert {g.release_status for g in api_load.grants if g.status == 201} == {200}
    refused = [t.status_line for t in gw_load.tunnels if " 200 " not in t.status_line + " "]
    assert refused == []
    for kind in ("lease.revoked", "lease.expired"):
        assert [b for b in events.of_type(kind) if b["proxy_id"] in ours] == []
    # The gateway retries a failed upstream on another proxy: none may have failed.
    reports = [b for b in events.of_type("lease.reported") if b["proxy_id"] in ours]
    assert [b for b in reports if b["data"].get("outcome") == "failed"] == []


def drained_then_forgotten(events: Events, removed: list[str], held: list[dict[str, Any]]) -> None:
    """Each removed proxy's proxy.drained came before its proxy.deleted, and a held one's
    proxy.deleted after its lease's lease.released."""
    order = [(b["type"], b["proxy_id"], b.get("lease_id", "")) for b in events.all()]

    def first(kind: str, pid: str) -> int:
        return next(i for i, o in enumerate(order) if o[:2] == (kind, pid))

    for pid in removed:
        assert first("proxy.drained", pid) < first("proxy.deleted", pid)
    for h in held:
        pid = h["proxy"]["id"]
        assert order.index(("lease.released", pid, h["lease_id"])) < first("proxy.deleted", pid)


def check_no_credential_leaked(
    up: Upstreams, gw_load: GatewayLoad, stack: Stack, events: Events
) -> None:
    """No upstream password (nor vendor username or session) in what a gateway client got,
    in any service's log, or in any event; raw and percent-encoded."""
    secrets = up.all_secrets() | {BROKEN_PASSWORD}
    forms = secrets | {quote(s, safe="") for s in secrets}
    assert not [s for t in gw_load.tunnels for s in forms if s.encode() in t.received]
    logs = log_files(stack)
    assert {"api.log", "gateway.log", "health.log", f"{PROVISIONER}.log"} <= set(logs)
    for name in ("health.log", f"{PROVISIONER}.log"):  # the run's logs, every proxy in them
        assert [e for e in up.first if proxy_id(e) not in logs[name]] == []
    assert {(name, s) for name, text in logs.items() for s in forms if s in text} == set()
    assert not [s for s in forms if s.encode() in events.published()]


def test_a_pasted_list_edited_while_leases_run(
    nats_url: str, redis_url: str, tmp_path: Path
) -> None:
    figures: dict[str, float] = {}
    listing = tmp_path / "proxies.txt"
    with running_upstreams() as up, Events(nats_url) as events:
        listing.write_text("".join(e.line + "\n" for e in up.first))
        first_ids = [proxy_id(e) for e in up.first]
        schemes = {proxy_id(e): e.scheme for e in (*up.first, *up.spare)}
        assert len(set(first_ids)) == 50
        began = time.monotonic()
        with static_stack(nats_url, redis_url, DB, listing, up.ca_file) as (stack, metrics_port):
            admin = Api(stack.api_url, stack.admin_token)
            client = Api(stack.api_url, stack.client_token)
            up_at = time.monotonic()

            # Health makes each ready through its own protocol, with its own exit.
            wait_for("50 proxies ready", lambda: ready(admin, first_ids), timeout=60)
            figures["s from the stack's start to 50 ready"] = time.monotonic() - began
            figures["s of it after the provisioner was up"] = time.monotonic() - up_at
            figures["s from the first registered to 50 ready"] = registered_to_ready(
                events, first_ids
            )
            expected = exits(up)
            listed = {p["id"]: p for p in admin.proxies(provider=PROVIDER)}
            assert sorted(listed) == sorted(first_ids)
            for pid in first_ids:
                got = (listed[pid]["scheme"], listed[pid]["egress_ip"], listed[pid]["external"])
                assert got == (schemes[pid], expected[pid], True)
            assert len({p["egress_ip"] for p in listed.values()}) == 50

            # Clients at work; a client holds leases on two proxies the edit removes.
            api_load, gw_load = ApiLoad(stack, PROVIDER), GatewayLoad(stack, PROVIDER)
            api_load.start()
            gw_load.start()
            wait_for("the loops", lambda: len(api_load.grants) >= 20 and len(gw_load.tunnels) >= 10)
            removed = [first_ids[i] for i in REMOVED]
            held = [hold(client, first_ids[i]) for i in [*HELD_REMOVED, HELD_KEPT]]
            held_removed = [h["proxy"]["id"] for h in held[:2]]
            before = {p["id"]: p for p in admin.proxies(provider=PROVIDER)}

            kept = [e for i, e in enumerate(up.first) if i not in REMOVED]
            edit(listing, kept, up.spare)
            edit_at = time.monotonic()
            os.kill(stack.processes[PROVISIONER].pid, signal.SIGHUP)
            wait_for("the removed drained", lambda: drained(admin, removed, held_removed))
            drained_at = time.monotonic()
            figures["s from SIGHUP to the removed ones drained"] = drained_at - edit_at
            added = [proxy_id(e) for e in up.spare]
            wait_for("the added proxies ready", lambda: ready(admin, added), timeout=30)
            figures["s from SIGHUP to the added ones ready"] = time.monotonic() - edit_at
            check_broken_line_reported(events, metrics_port)

            n_api, n_gw = len(api_load.grants), len(gw_load.tunnels)
            wait_for(
                "more grants after the edit",
                lambda: len(api_load.grants) >= n_api + 20 and len(gw_load.tunnels) >= n_gw + 10,
            )
            # The gateway picks proxies at random: it runs on until it went through each
            # protocol at least once (8 of 50 proxies speak SOCKS5).
            wait_for(
                "a tunnel through every protocol",
                lambda: {schemes.get(t.proxy_id) for t in list(gw_load.tunnels)} >= set(SCHEMES),
                timeout=30,
            )
            api_load.finish()
            gw_load.finish()
            for h in held:
                r = client.http.post(
                    f"/v1/leases/{h['lease_id']}/release", json={"epoch": h["epoch"]}
                )
                assert r.status_code == 200, r.text
            wait_for(
                "the held removed proxies forgotten",
                lambda: all(admin.proxy(p)["phase"] == "deleted" for p in held_removed),
            )

            check_no_lease_lost(api_load, gw_load, events, set(schemes))
            # Drained: no new lease on a removed proxy once the edit was seen applied;
            # forgotten only once its lease ended.
            late = [g.proxy_id for g in api_load.grants if g.asked_at > drained_at]
            late += [t.proxy_id for t in gw_load.tunnels if t.asked_at > drained_at]
            assert not set(late) & set(removed)
            drained_then_forgotten(events, removed, held[:2])
            # Unchanged ones kept their state: the same record, its generation counted on.
            after = {p["id"]: p for p in admin.proxies(provider=PROVIDER)}
            for pid in (proxy_id(e) for e in kept):
                assert after[pid]["phase"] == "ready"
                for kept_field in ("created_at", "egress_ip", "scheme"):
                    assert after[pid][kept_field] == before[pid][kept_field]
                assert after[pid]["gen"] >= before[pid]["gen"]
            # Each tunnel left from its proxy's own exit (a vendor session's exit is known
            # once the gateway stand-in saw it).
            expected = exits(up)
            assert [t for t in gw_load.tunnels if t.seen_ip != expected[t.proxy_id]] == []
            assert [pid for pid in added if after[pid]["egress_ip"] != expected[pid]] == []
            in_rotation = [p["egress_ip"] for p in after.values() if p["phase"] == "ready"]
            assert len(in_rotation) == len(set(in_rotation)) == 50 - len(REMOVED) + len(added)
            check_no_credential_leaked(up, gw_load, stack, events)

            figures["API grants"] = sum(g.status == 201 for g in api_load.grants)
            figures["API 503s"] = sum(g.status == 503 for g in api_load.grants)
            figures["gateway tunnels"] = len(gw_load.tunnels)
            for scheme in SCHEMES:
                through = [t for t in gw_load.tunnels if schemes.get(t.proxy_id) == scheme]
                figures[f"through {scheme}"] = len(through)
    print("static journey figures: " + ", ".join(f"{k}: {v:.4g}" for k, v in figures.items()))
