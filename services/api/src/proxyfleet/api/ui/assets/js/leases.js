// Active leases, soonest expiry first, each counting down to its expiry.

import { el, setText } from "./dom.js";
import { countdown } from "./format.js";

export class LeaseTable {
  constructor(body, count) {
    this.body = body;
    this.count = count;
    this.rows = new Map();
  }

  clear() {
    this.rows.clear();
    this.body.replaceChildren();
    setText(this.count, "");
  }

  /** Shows exactly these (active) leases. */
  replaceAll(leases, now) {
    const keep = new Set(leases.map((l) => l.lease_id));
    for (const id of [...this.rows.keys()]) if (!keep.has(id)) this.remove(id);
    for (const lease of leases) this.upsert(lease, now);
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
