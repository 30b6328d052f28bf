// Active leases, soonest expiry first, each counting down to its expiry.

import { el, setText } from "./dom.js";
import { countdown } from "./format.js";

export class LeaseTable {
  constructor(body, count) {
    this.body = body;
    this.count = count;
    this.rows = new Map();
    this.gone = new Map(); // id -> when its row went: a list older than that keeps it out
  }

  clear() {
    this.rows.clear();
    this.gone.clear();
    this.body.replaceChildren();
    setText(this.count, "");
  }

  /** Shows these active leases (listed from `since` on): rows of others go, unless an
   *  event newer than the list brought them. */
  replaceAll(leases, now, since = now) {
    const keep = new Set(leases.map((l) => l.lease_id));
    for (const [id, row] of [...this.rows]) if (!keep.has(id) && row.seen < since) this.remove(id);
    for (const lease of leases) {
      if (!(this.gone.get(lease.lease_id) >= since)) this.upsert(lease, now);
    }
    for (const [id, at] of [...this.gone]) if (at < since) this.gone.delete(id);
  }

  upsert(lease, now) {
    if (lease.state && lease.state !== "active") {
      this.remove(lease.lease_id);
      return;
    }
    let row = this.rows.get(lease.lease_id);
    if (!row) {
      row = {
        tr: el("tr", { testid: "lease-row", "data-lease-id": lease.lease_id }),
        cells: [0, 1, 2, 3, 4].map(() => el("td")),
        expiry: el("td", { class: "num", testid: "expires-in" }),
      };
      row.cells[0] = el("th", { scope: "row", class: "mono" });
      row.cells[1].className = "mono";
      row.tr.append(...row.cells, row.expiry);
      this.rows.set(lease.lease_id, row);
    }
    row.lease = { ...row.lease, ...lease };
    row.seen = now;
    const l = row.lease;
    [l.lease_id, l.proxy_id, l.holder, l.target, l.client].forEach((v, i) =>
      setText(row.cells[i], v || "\u2014"),
    );
    row.tr.dataset.proxyId = l.proxy_id || "";
    this.order(now);
  }

  remove(id) {
    const row = this.rows.get(id);
    if (!row) return;
    row.tr.remove();
    this.rows.delete(id);
    this.gone.set(id, Date.now() / 1000);
    setText(this.count, this.rows.size ? `(${this.rows.size})` : "");
  }

  /** Keeps rows sorted by expiry (the order of GET /v1/leases) and the counts current. */
  order(now) {
    const rows = [...this.rows.values()].sort((a, b) => a.lease.expires_at - b.lease.expires_at);
    const current = [...this.body.children];
    if (rows.some((r, i) => current[i] !== r.tr) || current.length !== rows.length) {
      this.body.replaceChildren(...rows.map((r) => r.tr));
    }
    setText(this.count, rows.length ? `(${rows.length})` : "");
    this.tick(now);
  }

  tick(now) {
    for (const row of this.rows.values()) {
      const left = countdown(row.lease.expires_at, now);
      setText(row.expiry, left);
      row.tr.classList.toggle("expired", left === "expired");
    }
  }
}

/** What a lease.* event changes in the table (pure): {granted: lease} (the event carries
 *  all the row shows), {renewed: {lease_id, expires_at}}, {remove: lease_id} or null. */
export function leaseChange(event) {
  const d = event.data || {};
  const what = String(event.type || "").split(".")[1];
  if (!event.lease_id) return null;
  if (what === "granted") {
    return {
      granted: {
        lease_id: event.lease_id,
        proxy_id: event.proxy_id || "",
        epoch: d.epoch,
        holder: d.holder || "",
        target: d.target || "",
        client: d.client || "",
        expires_at: d.expires_at || 0,
        state: "active",
      },
    };
  }
  if (what === "renewed" && d.expires_at) {
    return { renewed: { lease_id: event.lease_id, expires_at: d.expires_at } };
  }
  if (["released", "expired", "revoked"].includes(what)) return { remove: event.lease_id };
  return null;
}
