// Latency over the last minutes per proxy: samples fed by the probe stream, drawn as an
// inline SVG. `addSample` and `layout` are pure; `draw` only sets SVG attributes.

import { svg } from "./dom.js";
import { duration } from "./format.js";

export const WINDOW_S = 300;
export const MIN_SPAN_S = 30;
export const WIDTH = 120;
export const HEIGHT = 28;
const MAX_SAMPLES = 1000;

/** Adds a probe result {t, ms, ok} and drops what fell out of the window; kept in time order. */
export function addSample(samples, sample, now, windowS = WINDOW_S) {
  if (samples.length && samples[samples.length - 1].t > sample.t) {
    samples.push(sample);
    samples.sort((a, b) => a.t - b.t);
  } else {
    samples.push(sample);
  }
  const from = now - windowS;
  let drop = 0;
  while (drop < samples.length && samples[drop].t < from) drop++;
  if (samples.length - drop > MAX_SAMPLES) drop = samples.length - MAX_SAMPLES;
  if (drop) samples.splice(0, drop);
  return samples;
}

/** Where the samples go in a width x height box: the line of good probes (x,y pairs,
 *  higher latency higher up), the x of failed ones, and the scale's top in ms. The box
 *  spans the last `windowS` seconds, or less while the first sample is younger (at least
 *  `minSpanS`): a new proxy's line fills the box instead of hugging its right edge. */
export function layout(
  samples,
  now,
  { width = WIDTH, height = HEIGHT, windowS = WINDOW_S, minSpanS = MIN_SPAN_S } = {},
) {
  const visible = samples.filter((s) => s.t >= now - windowS && s.t <= now + 1);
  const oldest = visible.length ? visible[0].t : now;
  const span = Math.min(windowS, Math.max(minSpanS, now - oldest));
  const from = now - span;
  const good = visible.filter((s) => s.ok && s.ms >= 0);
  const top = Math.max(1, ...good.map((s) => s.ms));
  const x = (t) => Math.round(Math.max(0, Math.min(1, (t - from) / span)) * width * 10) / 10;
  const y = (ms) => Math.round((height - 2 - (ms / top) * (height - 4)) * 10) / 10;
  return {
    points: good.map((s) => `${x(s.t)},${y(s.ms)}`).join(" "),
    failures: visible.filter((s) => !s.ok).map((s) => x(s.t)),
    top,
    count: visible.length,
    span,
  };
}

/** A new, empty sparkline element. */
export function create() {
  return svg(
    "svg",
    { class: "spark", width: WIDTH, height: HEIGHT, viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img" },
    svg("title"),
    svg("polyline", { class: "spark-line", fill: "none", points: "" }),
    svg("g", { class: "spark-fail" }),
  );
}

/** Redraws `node` (from create()) with the samples at time `now`. */
export function draw(node, samples, now) {
  const { points, failures, top, count, span } = layout(samples, now);
  const [title, line, fails] = node.children;
  line.setAttribute("points", points);
  fails.replaceChildren(
    ...failures.map((x) => svg("rect", { x: Math.max(0, x - 1), y: HEIGHT - 4, width: 2, height: 4 })),
  );
  const label = count
    ? `${count} probes in the last ${duration(span)}, highest ${Math.round(top)} ms` +
      (failures.length ? `, ${failures.length} failed` : "")
    : "no probe yet";
  title.textContent = label;
  node.setAttribute("aria-label", label);
  node.dataset.samples = String(count);
}
