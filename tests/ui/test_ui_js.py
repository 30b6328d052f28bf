"""The dashboard's pure script modules (SSE parsing, backoff, formatting, the sparkline's
layout, the fleet's grouping), run in the real browser as the page runs them."""

from __future__ import annotations

import json

from tests.ui.conftest import Tab, run_module

READY_BODY = '{"type": "proxy.ready", "note": "d\u00e9j\u00e0"}'
STREAM = (
    "event: ready\ndata: {}\n\n"
    ": keep-alive\n\n"
    "id: e1\nevent: proxy.ready\n"
    f"data: {READY_BODY}\n\n"
    "event: probe\r\ndata: line one\r\ndata:line two\r\n\r\n"
    "data\rid: e2\r\r"
    "event: ignored-without-data\n\n"
    "retry: 5000\nevent: lease.granted\ndata: {}\n\n"
    "event: unfinished\ndata: not yet dispatched"
)
EXPECTED = [
    {"event": "ready", "data": "{}", "id": ""},
    {"event": "proxy.ready", "data": READY_BODY, "id": "e1"},
    {"event": "probe", "data": "line one\nline two", "id": "e1"},
    {"event": "message", "data": "", "id": "e2"},
    {"event": "lease.granted", "data": "{}", "id": "e2"},
]


async def test_the_sse_parser_gives_the_same_messages_however_the_stream_is_cut(
    tab: Tab, ui_url: str
) -> None:
    body = f"""
        const stream = {json.dumps(STREAM)};
        const whole = new m.SseParser().push(stream);
        const cuts = [];
        for (let i = 0; i <= stream.length; i++) {{
          for (const j of [i, Math.min(stream.length, i + 3)]) {{
            const p = new m.SseParser();
            const got = [...p.push(stream.slice(0, i)), ...p.push(stream.slice(i, j)),
                         ...p.push(stream.slice(j))];
            if (JSON.stringify(got) !== JSON.stringify(whole)) cuts.push([i, j, got]);
          }}
        }}
        const byChar = new m.SseParser();
        const oneByOne = [...stream].flatMap((c) => byChar.push(c));
        return {{ whole, cuts, oneByOne, retry: byChar.retry }};
    """
    got = await run_module(tab, ui_url, "sse.js", body)
    assert got["whole"] == EXPECTED
    assert got["cuts"] == []
    assert got["oneByOne"] == EXPECTED
    assert got["retry"] == 5000


async def test_reconnects_back_off_doubling_up_to_a_cap(tab: Tab, ui_url: str) -> None:
    got = await run_module(
        tab, ui_url, "sse.js", "return [0, 1, 2, 3, 4, 5, 6, 100].map(m.backoff);"
    )
    assert got == [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]


async def test_durations_countdowns_and_latencies_read_as_people_write_them(
    tab: Tab, ui_url: str
) -> None:
    body = """
        return {
          durations: [0, 5.9, 59, 60, 61, 3599, 3600, 3661, 86399, 86400, 90061, -3]
            .map(m.duration),
          countdowns: [m.countdown(100, 40.2), m.countdown(100, 100), m.countdown(100, 250)],
          latencies: [0, -1, 3.14159, 12.6, 250].map(m.latency),
          details: m.eventDetails({data: {from: "", gen: 1}}) + " | " +
            m.eventDetails({data: {holder: "h", target: "t", epoch: 3, reason: "r"}}),
        };
    """
    got = await run_module(tab, ui_url, "format.js", body)
    assert got["durations"] == [
        "0s", "5s", "59s", "1m 00s", "1m 01s", "59m 59s", "1h 00m", "1h 01m", "23h 59m",
        "1d 00h", "1d 01h", "0s",
    ]  # fmt: skip
    assert got["countdowns"] == ["1m 00s", "expired", "expired"]
    assert got["latencies"] == ["\u2014", "\u2014", "3.1 ms", "13 ms", "250 ms"]
    assert got["details"] == "from nothing | holder h, target t, epoch 3, reason: r"


async def test_the_sparkline_keeps_the_last_minutes_and_scales_to_its_highest_probe(
    tab: Tab, ui_url: str
) -> None:
    body = """
        const s = [];
        m.addSample(s, {t: 1000, ms: 50, ok: true}, 1000);
        m.addSample(s, {t: 1300, ms: 10, ok: true}, 1300);
        m.addSample(s, {t: 1150, ms: 20, ok: true}, 1300);  // late: sorted in
        m.addSample(s, {t: 1310, ms: 0, ok: false}, 1310);
        const kept = s.map((x) => x.t);
        const box = m.layout(s, 1310, {width: 300, height: 24, windowS: 300});
        const young = m.layout([{t: 1300, ms: 5, ok: true}], 1310, {width: 300, windowS: 300});
        const none = m.layout([], 1310);
        return {kept, box, young: [young.span, young.points], none: [none.span, none.count]};
    """
    got = await run_module(tab, ui_url, "sparkline.js", body)
    assert got["kept"] == [1150, 1300, 1310]  # t=1000 is older than five minutes at 1310
    box = got["box"]
    assert box["top"] == 20
    assert box["count"] == 3
    assert box["failures"] == [300]
    # x: the box spans from the oldest sample (160 s ago) to now; y: 22 at 0 ms, 2 at the top
    assert box["span"] == 160
    assert box["points"] == "0,2 281.3,12"
    assert got["young"] == [30, "200,2"]  # at least 30 s wide: 10 s ago is two thirds along
    assert got["none"] == [30, 0]


async def test_the_fleet_is_counted_by_provider_zone_and_phase(tab: Tab, ui_url: str) -> None:
    body = """
        const providers = [{name: "b", zones: ["b1"]}, {name: "a", zones: ["a2", "a1"]}];
        const proxies = [
          {provider: "a", zone: "a1", phase: "ready"},
          {provider: "a", zone: "a1", phase: "ready"},
          {provider: "a", zone: "a1", phase: "booting"},
          {provider: "a", zone: "a2", phase: "deleted"},
          {provider: "c", zone: "c1", phase: "failed"},
        ];
        return {
          fleet: m.groupFleet(proxies, providers),
          byProvider: m.groupProviders([{name: "a", counts: {ready: 2, deleted: 5, failed: 1}}]),
        };
    """
    got = await run_module(tab, ui_url, "fleet.js", body)
    assert got["fleet"] == [
        {"provider": "a", "zone": "a1", "counts": {"ready": 2, "booting": 1}, "total": 3},
        {"provider": "a", "zone": "a2", "counts": {}, "total": 0},
        {"provider": "b", "zone": "b1", "counts": {}, "total": 0},
        {"provider": "c", "zone": "c1", "counts": {"failed": 1}, "total": 1},
    ]
    assert got["byProvider"] == [
        {"provider": "a", "zone": "all zones", "counts": {"ready": 2, "failed": 1}, "total": 3}
    ]


async def test_markup_in_data_stays_text(tab: Tab, ui_url: str) -> None:
    body = """
        const evil = '<img src=x onerror="window.__owned = 1"><b>bold</b>';
        const node = m.el("td", {text: evil});
        const li = m.el("li", {}, evil, m.el("span", {text: evil}));
        document.body.append(node, li);
        await new Promise((r) => setTimeout(r, 50));
        const elements = node.children.length + li.querySelectorAll("img, b").length;
        return {text: node.textContent, elements, owned: window.__owned === 1};
    """
    got = await run_module(tab, ui_url, "dom.js", body)
    assert got == {
        "text": '<img src=x onerror="window.__owned = 1"><b>bold</b>',
        "elements": 0,
        "owned": False,
    }


async def test_lease_events_say_what_changes_in_the_table(tab: Tab, ui_url: str) -> None:
    body = """
        const granted = {type: "lease.granted", lease_id: "l1", proxy_id: "p1",
          data: {epoch: 7, holder: "h", target: "t", client: "c", expires_at: 1234.5}};
        return [
          m.leaseChange(granted),
          m.leaseChange({type: "lease.renewed", lease_id: "l1", data: {epoch: 7, expires_at: 99}}),
          ...["released", "expired", "revoked"].map(
            (w) => m.leaseChange({type: `lease.${w}`, lease_id: "l1", data: {}})),
          m.leaseChange({type: "lease.reported", lease_id: "l1", data: {outcome: "ok"}}),
          m.leaseChange({type: "lease.granted", data: {}}),
        ];
    """
    got = await run_module(tab, ui_url, "leases.js", body)
    assert got == [
        {
            "granted": {
                "lease_id": "l1",
                "proxy_id": "p1",
                "epoch": 7,
                "holder": "h",
                "target": "t",
                "client": "c",
                "expires_at": 1234.5,
                "state": "active",
            }
        },
        {"renewed": {"lease_id": "l1", "expires_at": 99}},
        {"remove": "l1"},
        {"remove": "l1"},
        {"remove": "l1"},
        None,
        None,
    ]


async def test_a_list_older_than_an_event_neither_drops_nor_revives_a_row(
    tab: Tab, ui_url: str
) -> None:
    """A refetch and the stream race: the list was read at `since`; a lease granted after
    it stays, one released after it stays out; the rows stay sorted by expiry."""
    body = """
        const body = document.createElement("tbody");
        const table = new m.LeaseTable(body, document.createElement("span"));
        const lease = (id, expires) => ({lease_id: id, proxy_id: "p", holder: "", target: "",
                                         client: "", expires_at: expires, state: "active"});
        const since = Date.now() / 1000;
        table.upsert(lease("old", 500), since - 10);
        table.upsert(lease("released", 400), since - 10);
        await new Promise((r) => setTimeout(r, 20));
        table.upsert(lease("new", 300), Date.now() / 1000);  // an event after the list was read
        table.remove("released");                            // another one
        table.replaceAll([lease("old", 500), lease("released", 400), lease("listed", 600)],
                         Date.now() / 1000, since);
        const order = [...body.children].map((tr) => tr.dataset.leaseId);
        table.replaceAll([lease("listed", 600)], Date.now() / 1000, Date.now() / 1000 + 1);
        return {order, later: [...body.children].map((tr) => tr.dataset.leaseId)};
    """
    got = await run_module(tab, ui_url, "leases.js", body)
    assert got["order"] == ["new", "old", "listed"]
    assert got["later"] == ["listed"]  # a list newer than everything is the truth


async def test_a_shared_exit_address_gets_a_badge(tab: Tab, ui_url: str) -> None:
    """The proxies table reads `egress_shared`: a badge when others leave through the same
    address, none when the proxy is alone on it or its address is unknown."""
    body = """
        const body = document.createElement("tbody");
        document.body.append(body);
        const table = new m.ProxyTable(body, {canAct: () => false, onDelete() {},
                                              onQuarantine() {}, onRelease() {}});
        const now = Date.now() / 1000;
        const proxy = (id, ip, shared) => ({id, provider: "local", zone: "z", phase: "ready",
          created_at: now, egress_ip: ip, egress_shared: shared, latency_ms: 0,
          last_probe_at: 0, leased: false});
        table.upsert(proxy("a", "127.0.0.5", 3), now);
        table.upsert(proxy("b", "127.0.0.6", 1), now);
        table.upsert(proxy("c", "", 0), now);
        const cell = (id, testid) => body.querySelector(
          `[data-proxy-id="${id}"] [data-testid="${testid}"]`);
        const seen = (id) => ({ip: cell(id, "egress").textContent,
          badge: cell(id, "egress-shared").textContent,
          shown: cell(id, "egress-shared").checkVisibility()});
        const before = ["a", "b", "c"].map(seen);
        table.upsert(proxy("a", "127.0.0.5", 1), now);  // the others left the address
        return {before, after: seen("a"), events: [...m.EGRESS_EVENTS].sort()};
    """
    got = await run_module(tab, ui_url, "proxies.js", body)
    assert got["before"] == [
        {"ip": "127.0.0.5", "badge": "shared \u00d73", "shown": True},
        {"ip": "127.0.0.6", "badge": "", "shown": False},
        {"ip": "\u2014", "badge": "", "shown": False},
    ]
    assert got["after"] == {"ip": "127.0.0.5", "badge": "", "shown": False}
    assert got["events"] == ["egress_changed", "egress_shared"]
