// The live event feed: newest first, the last MAX_EVENTS kept.

import { el } from "./dom.js";
import { clock, eventDetails } from "./format.js";

export const MAX_EVENTS = 200;

export function addEvent(list, event) {
  const time = Number.isFinite(event.time) ? event.time : Date.now() / 1000;
  const item = el(
    "li",
    { testid: "event", "data-type": event.type, "data-proxy-id": event.proxy_id || "" },
    el("time", { datetime: new Date(time * 1000).toISOString(), text: clock(time) }),
    el("span", { class: `etype ${String(event.type).split(".")[0]}`, text: event.type }),
    el("span", { class: "mono", text: event.proxy_id || "" }),
    el("span", { class: "details", text: eventDetails(event) }),
  );
  list.prepend(item);
  while (list.children.length > MAX_EVENTS) list.lastElementChild.remove();
}

/** A line in the feed from the page itself (stream connected, dropped...). */
export function addNote(list, text, now) {
  list.prepend(
    el(
      "li",
      { testid: "event-note", class: "note" },
      el("time", { text: clock(now) }),
      el("span", { class: "details", text }),
    ),
  );
  while (list.children.length > MAX_EVENTS) list.lastElementChild.remove();
}
