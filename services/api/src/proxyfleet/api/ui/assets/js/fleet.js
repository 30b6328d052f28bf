// The fleet at a glance: proxies counted by provider, zone and phase.

import { el } from "./dom.js";

/** Phases in lifecycle order (deleted proxies are not listed, so not counted). */
export const PHASES = ["pending", "provisioning", "booting", "ready", "unhealthy", "deleting", "failed"];

/** [{provider, zone, counts: {phase: n}, total}], sorted; every zone of every provider
 *  (from /v1/providers) appears, with zeros when it has no proxy. Pure. */
export function groupFleet(proxies, providers = []) {
  const groups = new Map();
  const group = (provider, zone) => {
    const key = JSON.stringify([provider, zone]);
    if (!groups.has(key)) groups.set(key, { provider, zone, counts: {}, total: 0 });
    return groups.get(key);
  };
  for (const p of providers) for (const zone of p.zones || []) group(p.name, zone);
  for (const proxy of proxies) {
    if (proxy.phase === "deleted") continue;
    const g = group(proxy.provider, proxy.zone);
    g.counts[proxy.phase] = (g.counts[proxy.phase] || 0) + 1;
    g.total += 1;
  }
  return [...groups.values()].sort(
    (a, b) => a.provider.localeCompare(b.provider) || a.zone.localeCompare(b.zone),
  );
}

/** Per provider only, from /v1/providers' counts (what a client token may see). Pure. */
export function groupProviders(providers) {
  return providers.map((p) => {
    const counts = { ...(p.counts || {}) };
    delete counts.deleted;
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    return { provider: p.name, zone: "all zones", counts, total };
  });
}

export function renderHead(row) {
  row.replaceChildren(
    el("th", { scope: "col", text: "Provider" }),
    el("th", { scope: "col", text: "Zone" }),
    ...PHASES.map((phase) => el("th", { scope: "col", class: `phase-col ${phase}`, text: phase })),
    el("th", { scope: "col", text: "Total" }),
  );
}

export function renderFleet(body, groups) {
  body.replaceChildren(
    ...groups.map((g) =>
      el(
        "tr",
        { testid: "fleet-row", "data-provider": g.provider, "data-zone": g.zone },
        el("th", { scope: "row", text: g.provider }),
        el("td", { text: g.zone }),
        ...PHASES.map((phase) =>
          el("td", {
            class: g.counts[phase] ? "num" : "num zero",
            "data-phase": phase,
            text: g.counts[phase] || 0,
          }),
        ),
        el("td", { class: "num total", "data-phase": "total", text: g.total }),
      ),
    ),
  );
}
