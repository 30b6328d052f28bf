// The event stream applied to the page: its state in the header, each event in the feed,
// and each change sent to the table it concerns (refetched there when it needs more).

import { errorOf } from "./api.js";
import { setText } from "./dom.js";
import { addEvent, addNote } from "./feed.js";
import { leaseChange } from "./leases.js";
import { EGRESS_EVENTS, WITHHELD_BY_EVENT } from "./proxies.js";
import { EventStream } from "./sse.js";

const now = () => Date.now() / 1000;

export class Live {
  /** status: the header's line; events: the feed; proxies, leases, pools: the tables;
   *  isAdmin(); refresh() refetches everything; proxyChanged(id) and leasesChanged()
   *  refetch in batches; renderSummary() recounts the fleet; signOut(message). */
  constructor(deps) {
    Object.assign(this, deps);
  }

  /** Opens the stream for this token (probe results only for an admin); returns it. */
  start(token, admin) {
    let connectedBefore = false;
    const stream = new EventStream(`/v1/events?probes=${admin}`, token, {
      onMessage: (message) => this.message(message),
      onState: (state, detail) => {
        if (state === "live") {
          this.setState("live", "live");
          if (connectedBefore) addNote(this.events, "event stream reconnected", now());
          connectedBefore = true;
          this.refresh(); // what changed before the stream was open (or while it was down)
        } else if (state === "connecting") {
          this.setState("connecting", "connecting\u2026");
        } else if (state === "retrying") {
          const seconds = Math.round(detail.delay / 1000);
          const text = `event stream down (${detail.reason}): retrying in ${seconds} s`;
          this.setState("retrying", text);
        }
      },
      onDenied: async (response) => {
        const err = await errorOf(response);
        this.setState("off", `event stream refused: ${err.describe()}`);
        if (response.status === 401) this.signOut(`Signed out: ${err.describe()}`);
      },
    });
    stream.start();
    return stream;
  }

  setState(state, text) {
    this.status.dataset.state = state;
    setText(this.status, text);
  }

  message(message) {
    if (message.event === "ready") return;
    if (message.event === "gap") {
      // the server dropped messages this page read too slowly: what they said is refetched
      addNote(this.events, "some events were lost (the page read too slowly): refetched", now());
      this.refresh();
      return;
    }
    let body;
    try {
      body = JSON.parse(message.data);
    } catch {
      return; // not ours to show
    }
    if (!body || typeof body !== "object") return;
    if (message.event === "probe") {
      this.proxies.probe(body, now());
      return;
    }
    if (typeof body.type !== "string") return;
    addEvent(this.events, body);
    const [kind, what] = body.type.split(".");
    if (kind === "proxy" && body.proxy_id) {
      if (WITHHELD_BY_EVENT.has(what)) {
        const withheld = WITHHELD_BY_EVENT.get(what);
        this.proxies.setWithheld(body.proxy_id, withheld, body.data?.reason || "", now());
      } else if (EGRESS_EVENTS.has(what)) {
        // the others on the address count one more (or fewer): refetch them too
        for (const other of body.data?.shared_with || []) this.proxyChanged(other);
      } else if (what !== "adopted") {
        this.proxies.setPhase(body.proxy_id, what, now());
      }
      this.renderSummary();
      this.proxyChanged(body.proxy_id);
    } else if (kind === "lease") {
      this.lease(body);
    } else if (kind === "pool") {
      this.pools.changed(); // the event says what changed, the status has the figures
    }
  }

  lease(event) {
    const admin = this.isAdmin();
    const change = leaseChange(event);
    // a client token may hear of others' leases; it lists only its own, so it refetches
    if (change?.remove) this.leases.remove(change.remove);
    else if (change?.renewed && this.leases.rows.has(change.renewed.lease_id)) {
      this.leases.upsert(change.renewed, now());
    } else if (change?.granted && admin) this.leases.upsert(change.granted, now());
    this.leasesChanged();
    if (event.proxy_id && admin) this.proxyChanged(event.proxy_id); // its `leased`
  }
}
