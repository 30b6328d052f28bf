// The dashboard: sign in, load the fleet, then follow the event stream and keep every
// table current without reloading. Every value from the API reaches the DOM as text.

import { Api, ApiError, describe } from "./api.js";
import { byId, setText } from "./dom.js";
import { groupFleet, groupProviders, renderFleet, renderHead } from "./fleet.js";
import { CreateForm } from "./create.js";
import { LeaseTable } from "./leases.js";
import { Live } from "./live.js";
import { PoolPanel } from "./pools.js";
import { ProxyTable } from "./proxies.js";
import { QuarantineDialog } from "./quarantine.js";

const TOKEN_KEY = "proxyfleet.token";
const TICK_MS = 1000;
/** A full refetch this often, in case the stream missed something (and on each reconnect). */
const RESYNC_MS = 30000;
/** Changes the stream reports are fetched in batches at most this often. */
const BATCH_MS = 250;
/** More changed proxies than this in one batch: refetch the list instead of each one. */
const MAX_SINGLE_FETCHES = 20;

const now = () => Date.now() / 1000;

const ui = {
  login: byId("login"),
  loginForm: byId("login-form"),
  loginError: byId("login-error"),
  token: byId("token"),
  dashboard: byId("dashboard"),
  logout: byId("logout"),
  who: byId("who"),
  loadError: byId("load-error"),
  fleetHead: byId("fleet-head"),
  fleetBody: byId("fleet-body"),
  create: byId("create"),
  proxyCount: byId("proxy-count"),
  proxiesNote: byId("proxies-note"),
  actionError: byId("action-error"),
  leasesNote: byId("leases-note"),
  events: byId("events"),
};

let session = null; // {api, admin, providers, stream, timers, dirtyProxies, ...} while signed in

const proxies = new ProxyTable(byId("proxies-body"), {
  canAct: () => Boolean(session?.admin),
  onDelete: (id) => proxyAction("Delete", id, "DELETE", ""),
  onQuarantine: (id) => quarantine.open(id),
  onRelease: (id) => proxyAction("Release", id, "DELETE", "/quarantine"),
});
const quarantine = new QuarantineDialog(byId("quarantine-dialog"), {
  send: (id, reason) =>
    session.api.call("POST", `/v1/proxies/${encodeURIComponent(id)}/quarantine`, { reason }),
  onDone: (proxy) => showProxies([proxy]),
  describe: (err) => (handleDenied(err) ? null : describe(err)),
});
// /v1/pools takes only an admin token: the panel is shown (and polled) for admins only
const pools = new PoolPanel(byId("pools"), {
  load: async () => (await session.api.get("/v1/pools")).items,
  describe: (err) => (handleDenied(err) ? null : describe(err)),
});
const leases = new LeaseTable(byId("leases-body"), byId("lease-count"));
const createForm = new CreateForm(byId("create-form"), {
  create: (body) => session.api.call("POST", "/v1/proxies", body),
  onCreated: showProxies,
  describe: (err) => (handleDenied(err) ? null : describe(err)),
});
const live = new Live({
  status: byId("stream-status"),
  events: ui.events,
  proxies,
  leases,
  pools,
  isAdmin: () => Boolean(session?.admin),
  refresh: () => refresh(),
  proxyChanged,
  leasesChanged,
  renderSummary,
  signOut,
});

// ---- signing in and out ------------------------------------------------------------

async function signIn(token) {
  const api = new Api(token);
  // /v1/providers takes any valid token; /v1/proxies only an admin one
  const providers = (await api.get("/v1/providers")).items;
  let admin = true;
  try {
    await api.get("/v1/proxies?limit=1");
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 403) throw err;
    admin = false;
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  const s = { api, admin, providers, timers: [], dirtyProxies: new Set(), flushTimer: 0 };
  session = s;
  showDashboard();
  if (admin) pools.start();
  await refresh();
  if (s !== session) return; // signed out meanwhile (the token was revoked, say)
  s.stream = live.start(token, admin);
  s.timers.push(setInterval(tick, TICK_MS), setInterval(() => refresh(), RESYNC_MS));
}

function signOut(message = "") {
  if (session) {
    session.stream?.stop();
    session.timers.forEach(clearInterval);
    clearTimeout(session.flushTimer);
    clearTimeout(session.leaseTimer);
  }
  session = null;
  sessionStorage.removeItem(TOKEN_KEY);
  quarantine.close();
  pools.stop();
  proxies.clear();
  leases.clear();
  ui.events.replaceChildren();
  ui.fleetBody.replaceChildren();
  ui.dashboard.hidden = true;
  ui.logout.hidden = true;
  ui.login.hidden = false;
  setText(ui.who, "");
  setText(ui.loginError, message);
  live.setState("off", "not connected");
  ui.token.value = "";
  ui.token.focus();
}

function showDashboard() {
  ui.login.hidden = true;
  ui.dashboard.hidden = false;
  ui.logout.hidden = false;
  setText(ui.loginError, "");
  setText(ui.who, session.admin ? "admin token" : "client token");
  ui.create.hidden = !session.admin;
  setText(
    ui.proxiesNote,
    session.admin ? "" : "Listing proxies needs an admin token: the fleet shows counts per provider.",
  );
  renderHead(ui.fleetHead);
  createForm.setProviders(session.providers);
}

// ---- loading ------------------------------------------------------------------------

/** Refetches everything this token may see. */
async function refresh() {
  const s = session;
  if (!s) return;
  const since = now();
  try {
    const [providers, proxyList] = await Promise.all([
      s.api.get("/v1/providers").then((b) => b.items),
      s.admin ? s.api.all("/v1/proxies") : Promise.resolve(null),
      pools.refresh(), // shows its own errors
    ]);
    if (s !== session) return;
    s.providers = providers;
    if (proxyList) proxies.replaceAll(proxyList, now(), since);
    setText(ui.loadError, "");
  } catch (err) {
    if (handleDenied(err)) return;
    setText(ui.loadError, `Could not load the fleet: ${describe(err)}`);
  }
  renderSummary();
  await refreshLeases();
}

async function refreshLeases() {
  const s = session;
  if (!s) return;
  const since = now();
  try {
    const list = await s.api.all("/v1/leases");
    if (s !== session) return;
    leases.replaceAll(list, now(), since);
    setText(ui.leasesNote, s.admin ? "" : "A client token lists the leases it holds.");
  } catch (err) {
    if (handleDenied(err)) return;
    setText(ui.leasesNote, `Could not list the leases: ${describe(err)}`);
  }
}

function renderSummary() {
  if (!session) return;
  const groups = session.admin
    ? groupFleet(proxies.proxies, session.providers)
    : groupProviders(session.providers);
  renderFleet(ui.fleetBody, groups);
  const n = proxies.rows.size;
  setText(ui.proxyCount, session.admin ? `(${n})` : "");
}

/** Fetches the proxies the stream said changed, batched. */
function proxyChanged(id) {
  const s = session;
  if (!s) return;
  s.dirtyProxies.add(id);
  if (s.flushTimer) return;
  s.flushTimer = setTimeout(async () => {
    s.flushTimer = 0;
    const ids = [...s.dirtyProxies];
    s.dirtyProxies.clear();
    if (!s.admin || ids.length > MAX_SINGLE_FETCHES) {
      await refresh(); // a client token's counts come from /v1/providers; many: one list
      return;
    }
    await Promise.all(ids.map((pid) => fetchProxy(s, pid)));
    renderSummary();
  }, BATCH_MS);
}

async function fetchProxy(s, id) {
  try {
    const proxy = await s.api.get(`/v1/proxies/${encodeURIComponent(id)}`);
    if (s === session) proxies.upsert(proxy, now());
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) proxies.remove(id);
    else if (!handleDenied(err)) setText(ui.loadError, `Could not load proxy ${id}: ${describe(err)}`);
  }
}

function leasesChanged() {
  const s = session;
  if (!s || s.leaseTimer) return;
  s.leaseTimer = setTimeout(() => {
    s.leaseTimer = 0;
    refreshLeases();
  }, BATCH_MS);
}

// ---- acting on a proxy ----------------------------------------------------------------

/** Delete or release (DELETE .../quarantine); a refusal's message goes above the table. */
async function proxyAction(what, id, method, suffix) {
  const s = session;
  if (!s) return;
  setText(ui.actionError, "");
  try {
    const proxy = await s.api.call(method, `/v1/proxies/${encodeURIComponent(id)}${suffix}`);
    if (s === session) showProxies([proxy]);
  } catch (err) {
    if (!handleDenied(err)) setText(ui.actionError, `${what} of ${id} failed: ${describe(err)}`);
  }
}

/** Proxies as the API answered an action on them (create, delete, quarantine, release). */
function showProxies(items) {
  if (!session) return;
  for (const proxy of items) proxies.upsert(proxy, now());
  renderSummary();
}

// ---- helpers ---------------------------------------------------------------------------

/** A 401 means the token is no longer valid: back to the sign-in form, saying why. */
function handleDenied(err) {
  if (err instanceof ApiError && err.status === 401) {
    signOut(`Signed out: ${err.describe()}`);
    return true;
  }
  return false;
}

function tick() {
  const t = now();
  proxies.tick(t);
  leases.tick(t);
}

// ---- wiring ----------------------------------------------------------------------------

ui.loginForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const token = ui.token.value.trim();
  if (!token) {
    setText(ui.loginError, "Enter a token.");
    return;
  }
  setText(ui.loginError, "");
  try {
    await signIn(token);
  } catch (err) {
    signOut(`Sign-in failed: ${describe(err)}`);
    ui.token.value = token;
  }
});
ui.logout.addEventListener("click", () => signOut());

const saved = sessionStorage.getItem(TOKEN_KEY);
if (saved) {
  signIn(saved).catch((err) => signOut(`Signed out: ${describe(err)}`));
} else {
  signOut();
}
document.documentElement.dataset.ready = "true";
