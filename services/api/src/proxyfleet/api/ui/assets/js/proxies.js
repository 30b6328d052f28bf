// The proxies table: one row per proxy, updated in place (from fetches and probe events),
// with the admin's actions on it (delete; quarantine and release).

import { el, setText } from "./dom.js";
import { duration, latency } from "./format.js";
import * as spark from "./sparkline.js";

const CONFIRM_MS = 5000;

/** What each proxy.* event of a withhold makes of the proxy's `withheld`. */
export const WITHHELD_BY_EVENT = new Map([
  ["drained", "draining"],
  ["quarantined", "quarantined"],
  ["unquarantined", ""],
]);

/** The proxy.* events of its exit address: no phase change, a refetch. */
export const EGRESS_EVENTS = new Set(["egress_changed", "egress_shared"]);

export class ProxyTable {
  /** canAct() says whether this token may act (admin); onDelete(id) is awaited when a
   *  delete is confirmed (a second click within 5 s), onRelease(id) when Release is
   *  clicked; onQuarantine(id) asks for the reason. */
  constructor(body, { canAct, onDelete, onQuarantine, onRelease }) {
    Object.assign(this, { body, canAct, onDelete, onQuarantine, onRelease });
    this.rows = new Map();
    this.gone = new Map(); // id -> when its row went: a list older than that keeps it out
  }

  get proxies() {
    return [...this.rows.values()].map((r) => r.proxy);
  }

  clear() {
    this.rows.clear();
    this.gone.clear();
    this.body.replaceChildren();
  }

  /** Shows these proxies (a list fetched from `since` on): rows of others go, unless
   *  something newer than the list (an event's fetch) brought them in the meantime. */
  replaceAll(proxies, now, since = now) {
    const keep = new Set(proxies.map((p) => p.id));
    for (const [id, row] of [...this.rows]) if (!keep.has(id) && row.seen < since) this.remove(id);
    for (const p of proxies) if (!(this.gone.get(p.id) >= since)) this.upsert(p, now);
    for (const [id, at] of [...this.gone]) if (at < since) this.gone.delete(id);
  }

  upsert(proxy, now) {
    if (proxy.phase === "deleted") {
      this.remove(proxy.id);
      return;
    }
    let row = this.rows.get(proxy.id);
    if (!row) {
      row = this.createRow(proxy);
      this.rows.set(proxy.id, row);
      this.body.append(row.tr); // the API lists in creation order, and new ones are newest
    }
    row.proxy = { ...row.proxy, ...proxy };
    row.seen = now;
    if (proxy.last_probe_at > 0 && proxy.latency_ms > 0 && !row.samples.length) {
      // seeded from the registry until the probe stream brings more
      spark.addSample(row.samples, { t: proxy.last_probe_at, ms: proxy.latency_ms, ok: true }, now);
    }
    this.paint(row, now);
  }

  /** A phase change the event stream told of, shown before the row is refetched. */
  setPhase(id, phase, now) {
    const row = this.rows.get(id);
    if (!row) return;
    if (phase === "deleted") this.remove(id);
    else this.upsert({ ...row.proxy, phase }, now);
  }

  remove(id) {
    const row = this.rows.get(id);
    if (!row) return;
    row.tr.remove();
    this.rows.delete(id);
    this.gone.set(id, Date.now() / 1000);
  }

  /** A drain, quarantine or release the event stream told of, shown before the refetch. */
  setWithheld(id, withheld, reason, now) {
    const row = this.rows.get(id);
    if (row) this.upsert({ ...row.proxy, withheld, withheld_reason: reason }, now);
  }

  /** A probe result from the stream: {proxy_id, time, ok, latency_ms, error, egress_ip}. */
  probe(result, now) {
    const row = this.rows.get(result.proxy_id);
    if (!row) return;
    spark.addSample(row.samples, { t: result.time, ms: result.latency_ms, ok: result.ok }, now);
    const update = { last_probe_at: result.time, last_probe_error: result.error || "" };
    if (result.ok) update.latency_ms = result.latency_ms;
    // only a first address: a change counts once health confirmed it (a refetch shows it)
    if (result.egress_ip && !row.proxy.egress_ip) update.egress_ip = result.egress_ip;
    row.proxy = { ...row.proxy, ...update };
    this.paint(row, now);
  }

  /** Ages and sparklines move with the clock. */
  tick(now) {
    for (const row of this.rows.values()) {
      setText(row.age, duration(now - row.proxy.created_at));
      spark.draw(row.spark, row.samples, now);
    }
  }

  createRow(proxy) {
    const cell = (cls) => el("td", { class: cls });
    const row = {
      proxy,
      samples: [],
      id: el("th", { scope: "row", class: "mono", text: proxy.id }),
      pool: el("td", { testid: "pool" }),
      where: cell(""),
      phase: el("span", { class: "phase", testid: "phase" }),
      withheld: el("span", { class: "badge", testid: "withheld" }),
      withheldReason: el("span", { class: "withheld-reason", testid: "withheld-reason" }),
      age: cell("num"),
      latencyText: el("span", { class: "num latency", testid: "latency" }),
      spark: spark.create(),
      egress: el("span", { class: "mono", testid: "egress" }),
      shared: el("span", { class: "badge shared", testid: "egress-shared" }),
      lease: el("td", { testid: "leased" }),
      button: el("button", { type: "button", class: "danger", testid: "delete" }),
      quarantine: el("button", {
        type: "button",
        class: "quiet",
        testid: "quarantine",
        "aria-label": `Quarantine proxy ${proxy.id}`,
        text: "Quarantine",
      }),
      release: el("button", {
        type: "button",
        class: "quiet",
        testid: "release",
        "aria-label": `Release proxy ${proxy.id} from quarantine`,
        text: "Release",
      }),
      confirmTimer: 0,
    };
    row.tr = el(
      "tr",
      { testid: "proxy-row", "data-proxy-id": proxy.id },
      row.id,
      row.pool,
      row.where,
      el("td", {}, row.phase, row.withheld, row.withheldReason),
      row.age,
      el("td", {}, el("div", { class: "latency-cell" }, row.spark, row.latencyText)),
      el("td", {}, row.egress, row.shared),
      row.lease,
      el("td", {}, el("div", { class: "actions" }, row.quarantine, row.release, row.button)),
    );
    row.button.addEventListener("click", () => this.clickDelete(row));
    row.quarantine.addEventListener("click", () => this.onQuarantine(row.proxy.id));
    row.release.addEventListener("click", () => this.clickRelease(row));
    this.resetButton(row);
    return row;
  }

  resetButton(row) {
    clearTimeout(row.confirmTimer);
    row.confirming = false;
    row.button.textContent = "Delete";
    row.button.setAttribute("aria-label", `Delete proxy ${row.proxy.id}`);
  }

  async clickDelete(row) {
    if (!row.confirming) {
      row.confirming = true;
      row.button.textContent = "Confirm delete";
      row.button.setAttribute("aria-label", `Confirm: delete proxy ${row.proxy.id}`);
      row.confirmTimer = setTimeout(() => this.resetButton(row), CONFIRM_MS);
      return;
    }
    this.resetButton(row);
    row.button.disabled = true;
    try {
      await this.onDelete(row.proxy.id);
    } finally {
      row.button.disabled = false;
    }
  }

  async clickRelease(row) {
    row.release.disabled = true;
    try {
      await this.onRelease(row.proxy.id);
    } finally {
      row.release.disabled = false;
    }
  }

  paint(row, now) {
    const p = row.proxy;
    row.tr.dataset.phase = p.phase;
    setText(row.pool, p.pool || "");
    setText(row.where, `${p.provider} / ${p.zone}`);
    setText(row.phase, p.phase);
    row.phase.className = `phase ${p.phase}`;
    if (p.reason) row.phase.title = p.reason;
    else row.phase.removeAttribute("title");
    const withheld = p.withheld || "";
    row.tr.dataset.withheld = withheld;
    row.withheld.hidden = !withheld;
    setText(row.withheld, withheld);
    row.withheld.className = `badge ${withheld}`;
    const reason = withheld ? p.withheld_reason || "" : "";
    setText(row.withheldReason, reason);
    if (reason) row.withheldReason.title = reason; // the cell cuts a long one short
    else row.withheldReason.removeAttribute("title");
    setText(row.age, duration(now - p.created_at));
    setText(row.latencyText, p.last_probe_error ? "failing" : latency(p.latency_ms));
    if (p.last_probe_error) row.latencyText.title = p.last_probe_error;
    else row.latencyText.removeAttribute("title");
    setText(row.egress, p.egress_ip || "\u2014");
    const shared = p.egress_ip && p.egress_shared > 1 ? p.egress_shared : 0;
    row.shared.hidden = !shared;
    setText(row.shared, shared ? `shared \u00d7${shared}` : "");
    if (shared) row.shared.title = `${shared} proxies leave through ${p.egress_ip}`;
    else row.shared.removeAttribute("title");
    setText(row.lease, p.leased ? "leased" : "");
    const admin = this.canAct();
    row.button.hidden = !admin || p.phase === "deleting";
    row.quarantine.hidden = !admin || p.phase === "deleting" || withheld === "quarantined";
    row.release.hidden = !admin || withheld !== "quarantined";
    spark.draw(row.spark, row.samples, now);
  }
}
