// The pools panel (admin tokens): each pool's size and figures as its controller last
// wrote them, and those of its conditions that are not as they should be.

import { el, setText } from "./dom.js";
import { clock, duration } from "./format.js";

/** The controller rewrites every status each pass (2 s by default) with no event for it:
 *  the panel refetches this often, besides after pool.* events and every reconnect. */
export const POLL_MS = 5000;
/** pool.* events are followed by one refetch at most this often. */
const BATCH_MS = 250;
/** The status figures shown, in column order (desired is the pool's own). */
export const FIGURES = ["ready", "leased", "free", "draining", "quarantined"];
/** The status each condition should have; null: either is normal (the pool at work). A
 *  condition not listed (CapacityExceeded, ProviderFailing...) is a problem when true. */
const EXPECTED = new Map([
  ["Ready", true],
  ["Progressing", null],
  ["Recycling", null],
]);
const DASH = "\u2014";

/** The conditions not as they should be (Ready false, CapacityExceeded true...). Pure. */
export function poolProblems(pool) {
  return (pool.status?.conditions || []).filter((c) => {
    const expected = EXPECTED.has(c.type) ? EXPECTED.get(c.type) : false;
    return expected !== null && Boolean(c.status) !== expected;
  });
}

/** How a problem reads: "not Ready: 1 of 3 ready", "CapacityExceeded: ...". Pure. */
export function problemText(condition) {
  const name = condition.status ? condition.type : `not ${condition.type}`;
  return condition.message ? `${name}: ${condition.message}` : name;
}

/** What a row shows, as text: {desired, ready, ..., oldest, noStatus}. Pure. */
export function poolFigures(pool) {
  const s = pool.status;
  const out = { desired: String(pool.desired ?? DASH), noStatus: !s };
  for (const f of FIGURES) out[f] = s ? String(s[f] ?? 0) : DASH;
  out.oldest = s && s.oldest_age > 0 ? duration(s.oldest_age) : DASH;
  return out;
}

export class PoolPanel {
  /** load() resolves to the pools (GET /v1/pools); describe(err) is the message for a
   *  failure (null: already handled, e.g. signed out). */
  constructor(section, { load, describe }) {
    Object.assign(this, { section, load, describe });
    this.body = section.querySelector("tbody");
    this.count = section.querySelector("[data-testid=pool-count]");
    this.note = section.querySelector("[data-testid=pools-note]");
    this.rows = new Map();
    this.active = false;
    this.seq = 0; // answers older than the one shown are dropped
    this.shown = 0;
    this.pollTimer = 0;
    this.batchTimer = 0;
  }

  /** Shows the panel and polls (an admin signed in). */
  start() {
    this.active = true;
    this.section.hidden = false;
    this.pollTimer = setInterval(() => {
      if (!document.hidden) this.refresh(); // a hidden tab catches up on its next poll
    }, POLL_MS);
  }

  /** Hides and empties the panel; answers still on their way are dropped. */
  stop() {
    this.active = false;
    this.shown = ++this.seq;
    clearInterval(this.pollTimer);
    clearTimeout(this.batchTimer);
    this.batchTimer = 0;
    this.section.hidden = true;
    this.rows.clear();
    this.body.replaceChildren();
    setText(this.count, "");
    setText(this.note, "");
  }

  /** A pool.* event: refetch soon (one fetch for a burst). */
  changed() {
    if (!this.active || this.batchTimer) return;
    this.batchTimer = setTimeout(() => {
      this.batchTimer = 0;
      this.refresh();
    }, BATCH_MS);
  }

  async refresh() {
    if (!this.active) return;
    const seq = ++this.seq;
    try {
      const pools = await this.load();
      if (seq < this.shown) return;
      this.shown = seq;
      this.show(pools);
      setText(this.note, pools.length ? "" : "No pool declared (PUT /v1/pools/<name>).");
    } catch (err) {
      if (seq < this.shown) return;
      const message = this.describe(err);
      if (message !== null) setText(this.note, `Could not load the pools: ${message}`);
    }
  }

  /** Rows for these pools, in the API's order (oldest first), updated in place. */
  show(pools) {
    const names = new Set(pools.map((p) => p.name));
    for (const name of [...this.rows.keys()]) if (!names.has(name)) this.rows.delete(name);
    const rows = pools.map((pool) => {
      let row = this.rows.get(pool.name);
      if (!row) {
        row = createRow(pool.name);
        this.rows.set(pool.name, row);
      }
      paint(row, pool);
      return row.tr;
    });
    const current = [...this.body.children];
    if (current.length !== rows.length || rows.some((tr, i) => current[i] !== tr)) {
      this.body.replaceChildren(...rows);
    }
    setText(this.count, `(${pools.length})`);
  }
}

function createRow(name) {
  const num = (field) => el("td", { class: "num", "data-field": field });
  const row = {
    name: el("span", { text: name }),
    deleting: el("span", { class: "badge deleting", testid: "pool-deleting", text: "deleting" }),
    owner: el("td", { "data-field": "owner" }),
    desired: num("desired"),
    figures: Object.fromEntries(FIGURES.map((f) => [f, num(f)])),
    oldest: num("oldest"),
    conditions: el("td", { class: "conditions", testid: "pool-conditions" }),
    problems: null,
  };
  row.tr = el(
    "tr",
    { testid: "pool-row", "data-pool": name },
    el("th", { scope: "row", class: "mono" }, row.name, row.deleting),
    row.owner,
    row.desired,
    ...FIGURES.map((f) => row.figures[f]),
    row.oldest,
    row.conditions,
  );
  return row;
}

function paint(row, pool) {
  const f = poolFigures(pool);
  const s = pool.status;
  row.tr.classList.toggle("deleting", Boolean(pool.deleting));
  row.tr.dataset.deleting = String(Boolean(pool.deleting));
  row.deleting.hidden = !pool.deleting;
  setText(row.owner, pool.owner);
  setTitle(row.owner, pool.owner_ref);
  setText(row.desired, f.desired);
  const d = s?.last_decision;
  setTitle(row.desired, d ? `${d.action} ${d.from_size} \u2192 ${d.to_size}: ${d.reason}` : "");
  for (const name of FIGURES) setText(row.figures[name], f[name]);
  setTitle(
    row.figures.ready,
    s ? `${s.starting || 0} starting, ${s.unhealthy || 0} unhealthy, ${s.surge || 0} surge` : "",
  );
  setText(row.oldest, f.oldest);
  setTitle(row.conditions, s?.updated_at ? `status written at ${clock(s.updated_at)}` : "");
  const problems = poolProblems(pool);
  const key = f.noStatus ? "none" : JSON.stringify(problems);
  if (key === row.problems) return; // unchanged: no DOM churn every poll
  row.problems = key;
  if (f.noStatus) {
    row.conditions.replaceChildren(el("span", { class: "muted", text: "no status yet" }));
  } else if (!problems.length) {
    row.conditions.replaceChildren(el("span", { class: "ok-text", text: "ok" }));
  } else {
    row.conditions.replaceChildren(
      ...problems.map((c) =>
        el("span", {
          class: "cond bad",
          testid: "pool-condition",
          "data-type": c.type,
          title: [c.reason && `reason ${c.reason}`, c.since && `since ${clock(c.since)}`]
            .filter(Boolean)
            .join(", ") || undefined,
          text: problemText(c),
        }),
      ),
    );
  }
}

function setTitle(node, title) {
  if (title) node.title = title;
  else node.removeAttribute("title");
}
