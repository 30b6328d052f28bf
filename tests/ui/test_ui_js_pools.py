"""The dashboard's pool and quarantine helpers (which conditions a pool lists, its
figures, the feed's words for pool and withhold events, a row's withheld state), run in
the real browser as the page runs them."""

from __future__ import annotations

from tests.ui.conftest import Tab, run_module


async def test_a_pool_lists_only_the_conditions_not_as_they_should_be(
    tab: Tab, ui_url: str
) -> None:
    body = """
        const c = (type, status, message = "") => ({type, status, reason: "R", message, since: 1});
        const pool = {name: "eu", desired: 4, status: {
          desired: 4, ready: 3, leased: 1, free: 2, draining: 1, quarantined: 0,
          oldest_age: 3725.5,
          conditions: [c("Ready", false, "3 of 4 ready"), c("Progressing", true),
                       c("Recycling", true, "1 members past max_age"),
                       c("CapacityExceeded", true, "1 members could not be created: full"),
                       c("ProviderFailing", false), c("OwnerConflict", true)],
        }};
        const fine = {name: "ok", desired: 1, status: {desired: 1, ready: 1, oldest_age: 0,
                      conditions: [c("Ready", true), c("Progressing", false)]}};
        const fresh = {name: "new", desired: 2, status: null};
        return {
          problems: m.poolProblems(pool).map(m.problemText),
          none: [m.poolProblems(fine), m.poolProblems(fresh)],
          figures: [m.poolFigures(pool), m.poolFigures(fine), m.poolFigures(fresh)],
        };
    """
    got = await run_module(tab, ui_url, "pools.js", body)
    assert got["problems"] == [
        "not Ready: 3 of 4 ready",
        "CapacityExceeded: 1 members could not be created: full",
        "OwnerConflict",  # a condition the page does not know: a problem when true
    ]
    assert got["none"] == [[], []]
    dash = "\u2014"
    assert got["figures"] == [
        {"desired": "4", "noStatus": False, "ready": "3", "leased": "1", "free": "2",
         "draining": "1", "quarantined": "0", "oldest": "1h 02m"},
        {"desired": "1", "noStatus": False, "ready": "1", "leased": "0", "free": "0",
         "draining": "0", "quarantined": "0", "oldest": dash},
        {"desired": "2", "noStatus": True, "ready": dash, "leased": dash, "free": dash,
         "draining": dash, "quarantined": dash, "oldest": dash},
    ]  # fmt: skip


async def test_pool_and_withhold_events_read_in_the_feed(tab: Tab, ui_url: str) -> None:
    body = """
        return [
          {type: "pool.scaled", pool: "eu", data: {size: 4, from_size: 3, reason: "refused"}},
          {type: "pool.condition", pool: "eu",
           data: {condition: "CapacityExceeded", status: true, reason: "NoRoom", message: "full"}},
          {type: "pool.condition", pool: "eu", data: {condition: "Ready", status: false}},
          {type: "proxy.quarantined", pool: "eu", data: {reason: "blocked", by: "ops"}},
          {type: "proxy.unquarantined", pool: "", data: {by: "ops"}},
        ].map(m.eventDetails);
    """
    got = await run_module(tab, ui_url, "format.js", body)
    assert got == [
        "pool eu, size 3 \u2192 4, reason: refused",
        "pool eu, CapacityExceeded true, reason: NoRoom, full",
        "pool eu, Ready false",
        "pool eu, by ops, reason: blocked",
        "by ops",
    ]


async def test_withhold_events_set_a_proxys_withheld(tab: Tab, ui_url: str) -> None:
    """What the stream's proxy.drained / quarantined / unquarantined make of a row, before
    its refetch: never a phase of that name."""
    body = """
        const table = new m.ProxyTable(document.createElement("tbody"), {
          canAct: () => true, onDelete() {}, onQuarantine() {}, onRelease() {}});
        table.upsert({id: "p1", provider: "a", zone: "z", phase: "ready", created_at: 0,
                      pool: "eu", withheld: "", withheld_reason: ""}, 10);
        const seen = [];
        for (const what of ["drained", "quarantined", "unquarantined"]) {
          const reason = what === "unquarantined" ? "" : "why";
          table.setWithheld("p1", m.WITHHELD_BY_EVENT.get(what), reason, 11);
          const tr = table.rows.get("p1").tr;
          const shown = (id) => !tr.querySelector(`[data-testid=${id}]`).hidden;
          seen.push([tr.dataset.phase, tr.dataset.withheld, shown("quarantine"), shown("release")]);
        }
        return seen;
    """
    got = await run_module(tab, ui_url, "proxies.js", body)
    assert got == [
        ["ready", "draining", True, False],
        ["ready", "quarantined", False, True],
        ["ready", "", True, False],
    ]
