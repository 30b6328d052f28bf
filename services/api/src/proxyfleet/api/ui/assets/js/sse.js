// Server-sent events over fetch(): EventSource cannot send an Authorization header.
// SseParser is pure (text in, messages out) and follows the HTML standard's parsing rules;
// EventStream reads the response body with it and reconnects with backoff.

/** Turns a text/event-stream, fed in chunks of any size, into {event, data, id}. */
export class SseParser {
  constructor() {
    this.buffer = "";
    this.data = [];
    this.event = "";
    this.lastId = "";
    this.retry = null;
  }

  /** The messages that `text` completes (none while a message is still open). */
  push(text) {
    this.buffer += text;
    const out = [];
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const c = this.buffer[i];
      if (c !== "\n" && c !== "\r") continue;
      // a \r at the end of a chunk may be the first half of \r\n: wait for the next one
      if (c === "\r" && i + 1 === this.buffer.length) break;
      const line = this.buffer.slice(start, i);
      if (c === "\r" && this.buffer[i + 1] === "\n") i++;
      start = i + 1;
      const message = this.line(line);
      if (message) out.push(message);
    }
    this.buffer = this.buffer.slice(start);
    return out;
  }

  line(line) {
    if (line === "") {
      const message = this.data.length
        ? { event: this.event || "message", data: this.data.join("\n"), id: this.lastId }
        : null;
      this.data = [];
      this.event = "";
      return message;
    }
    if (line.startsWith(":")) return null; // a comment: keep-alive
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.data.push(value);
    else if (field === "event") this.event = value;
    else if (field === "id" && !value.includes("\0")) this.lastId = value;
    else if (field === "retry" && /^\d+$/.test(value)) this.retry = Number(value);
    return null;
  }
}

export const FIRST_DELAY_MS = 1000;
export const MAX_DELAY_MS = 30000;
/** A stream silent this long (no event, no keep-alive) is taken as dead and reopened. */
export const SILENCE_MS = 60000;

/** Milliseconds before reconnect attempt `attempt` (0, 1, ...): doubling, capped. */
export function backoff(attempt) {
  return Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.min(attempt, 16));
}

/** Reads `url` as an event stream until stopped, reconnecting after each drop.
 *  onState(state, detail): "connecting" | "live" | "retrying" (detail: ms, reason) | "off";
 *  onMessage({event, data, id}); onDenied(status, response): 401/403, no more retries. */
export class EventStream {
  constructor(url, token, { onMessage, onState, onDenied }) {
    Object.assign(this, { url, token, onMessage, onState, onDenied });
    this.stopped = true;
    this.lastId = "";
    this.controller = null;
  }

  start() {
    this.stopped = false;
    this.run();
  }

  stop() {
    this.stopped = true;
    this.controller?.abort();
    clearTimeout(this.wakeTimer);
    this.wake?.();
    this.onState("off");
  }

  async run() {
    let attempt = 0;
    while (!this.stopped) {
      this.onState("connecting");
      let reason = "";
      try {
        if (await this.readOnce(() => { attempt = 0; })) return; // denied
        reason = "stream ended";
      } catch (err) {
        reason = err?.message || String(err);
      }
      if (this.stopped) return;
      const delay = backoff(attempt++);
      this.onState("retrying", { delay, reason });
      await new Promise((resolve) => {
        this.wake = resolve;
        this.wakeTimer = setTimeout(resolve, delay);
      });
    }
  }

  /** One connection; true when the token was refused (the caller stops). */
  async readOnce(onReady) {
    const controller = new AbortController();
    this.controller = controller;
    const headers = { Authorization: `Bearer ${this.token}`, Accept: "text/event-stream" };
    if (this.lastId) headers["Last-Event-ID"] = this.lastId;
    const response = await fetch(this.url, { headers, signal: controller.signal, cache: "no-store" });
    if (response.status === 401 || response.status === 403) {
      this.onDenied(response);
      return true;
    }
    if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    const parser = new SseParser();
    let watchdog = setTimeout(() => controller.abort(), SILENCE_MS);
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return false;
        clearTimeout(watchdog);
        watchdog = setTimeout(() => controller.abort(), SILENCE_MS);
        for (const message of parser.push(value)) {
          if (message.id) this.lastId = message.id;
          if (message.event === "ready") {
            onReady();
            this.onState("live");
          }
          this.onMessage(message);
        }
      }
    } finally {
      clearTimeout(watchdog);
      controller.abort();
    }
  }
}
