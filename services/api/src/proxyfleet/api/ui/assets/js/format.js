// Pure formatting of times and figures (no DOM): tested in the browser by tests/ui.

const pad = (n) => String(n).padStart(2, "0");

/** Whole seconds as "42s", "3m 04s", "2h 05m", "3d 04h". */
export function duration(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${pad(Math.floor((s % 3600) / 60))}m`;
  return `${Math.floor(s / 86400)}d ${pad(Math.floor((s % 86400) / 3600))}h`;
}

/** Time left until `expiresAt` (epoch seconds) as a duration, or "expired". */
export function countdown(expiresAt, now) {
  const left = expiresAt - now;
  return left <= 0 ? "expired" : duration(Math.ceil(left));
}

/** Epoch seconds as local HH:MM:SS. */
export function clock(epochSeconds) {
  const d = new Date(epochSeconds * 1000);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** A latency in milliseconds, or an em dash when there is none yet. */
export function latency(ms) {
  if (!(ms > 0)) return "\u2014";
  return ms < 10 ? `${ms.toFixed(1)} ms` : `${Math.round(ms)} ms`;
}

/** The words an event adds to its type in the feed, from its `pool` and `data`. */
export function eventDetails(event) {
  const d = event.data || {};
  const parts = [];
  if (event.pool) parts.push(`pool ${event.pool}`);
  if (d.from !== undefined && d.from !== null) parts.push(`from ${d.from || "nothing"}`);
  if (d.holder) parts.push(`holder ${d.holder}`);
  if (d.target) parts.push(`target ${d.target}`);
  if (d.client) parts.push(`client ${d.client}`);
  if (d.outcome) parts.push(`outcome ${d.outcome}`);
  if (d.epoch !== undefined && d.epoch !== null) parts.push(`epoch ${d.epoch}`);
  if (d.size !== undefined && d.size !== null) {
    parts.push(
      d.from_size !== undefined && d.from_size !== null
        ? `size ${d.from_size} \u2192 ${d.size}`
        : `size ${d.size}`,
    );
  }
  if (d.condition) parts.push(`${d.condition} ${d.status ? "true" : "false"}`);
  if (d.by) parts.push(`by ${d.by}`);
  if (d.reason) parts.push(`reason: ${d.reason}`);
  if (d.message) parts.push(d.message);
  return parts.join(", ");
}
