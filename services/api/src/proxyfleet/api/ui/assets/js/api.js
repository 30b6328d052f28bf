// Calls to /v1 with the bearer token; an error answer becomes an ApiError carrying the
// API's own message ({"error": code, "message": text}).

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }

  /** What the page shows: the API's message, then its code and the HTTP status. */
  describe() {
    const code = this.code ? ` ${this.code}` : "";
    return `${this.message} (HTTP ${this.status}${code})`;
  }
}

/** What the page shows for any failure: an ApiError's description, else the message. */
export function describe(err) {
  return err instanceof ApiError ? err.describe() : String(err?.message || err);
}

/** The ApiError of a non-2xx response (its body need not be JSON). */
export async function errorOf(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    // not JSON: a proxy in front of the API, say
  }
  const message = typeof body?.message === "string" && body.message
    ? body.message
    : `${response.status} ${response.statusText || "error"}`;
  return new ApiError(response.status, typeof body?.error === "string" ? body.error : "", message);
}

export const MAX_PAGES = 20;
/** Page size of list calls (the API's maximum). */
export const PAGE_LIMIT = 500;

export class Api {
  constructor(token) {
    this.token = token;
  }

  async call(method, path, body) {
    const headers = { Authorization: `Bearer ${this.token}`, Accept: "application/json" };
    const init = { method, headers, cache: "no-store" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch (err) {
      throw new ApiError(0, "network", `the API did not answer: ${err.message || err}`);
    }
    if (!response.ok) throw await errorOf(response);
    return response.status === 204 ? null : response.json();
  }

  get(path) {
    return this.call("GET", path);
  }

  /** Every item of a paged list, following next_cursor (at most MAX_PAGES pages). */
  async all(path, params = {}) {
    const items = [];
    let cursor = "";
    for (let page = 0; page < MAX_PAGES; page++) {
      const query = new URLSearchParams({ ...params, limit: String(PAGE_LIMIT) });
      if (cursor) query.set("cursor", cursor);
      const body = await this.get(`${path}?${query}`);
      items.push(...body.items);
      if (!body.next_cursor) break;
      cursor = body.next_cursor;
    }
    return items;
  }
}
