// The occupancy panel: how many subscribers the page's channels and patterns have across every worker of every
// instance, from the control plane (GET /v1/server/occupancy), once a second while the page is visible. The
// control plane wants an API key when authentication is on, and leaves this port for the admin listener when
// ADMIN_PORT is set: then the page cannot reach it, says so once and stops asking.

const POLL_MS = 1000;
/** After an answer that may pass (no worker answered, the network): ask again, but slower. */
const RETRY_MS = 5000;
/** The page asks for at most this many of its subscriptions a round, and lists this many patterns of each. */
const MAX_ASKED = 8;
const TOP = 5;

const isPattern = (c) => c.split(".").some((t) => t === "*" || t === ">");

/** Why the control plane is out of the page's reach, by the status it answered; undefined when it is not. */
function unreachable(status) {
  if (status === 401 || status === 403) return `occupancy needs the admin API (an API key): this port refused the page (HTTP ${status}). Not polling.`;
  if (status === 404) return "occupancy needs the admin API (ADMIN_PORT): it is served on the admin listener, not this port. Not polling.";
  if (status === 501) return "occupancy is not served by this gateway's broker here. Not polling.";
  return undefined;
}

async function ask(channel) {
  const q = `${isPattern(channel) ? "pattern" : "channel"}=${encodeURIComponent(channel)}`;
  const r = await fetch(`/v1/server/occupancy?${q}`, { cache: "no-store" });
  const body = await r.json().catch(() => ({}));
  return { channel, status: r.status, body };
}

/**
 * Starts the panel in `root` (#occupancy: #occ-subs, #occ-instances, #occ-workers, #occ-complete, #occ-note).
 * `channels()` gives the page's subscriptions; `refresh()` asks now (after a subscribe).
 */
export function occupancyPanel(root, channels) {
  const $ = (sel) => root.querySelector(sel);
  let timer;
  let inFlight = false;
  let stopped = false;

  const note = (state, text) => {
    root.dataset.state = state;
    $("#occ-note").textContent = text;
    $("#occ-note").className = state === "refused" || state === "error" ? "error" : "muted";
  };
  const coverage = (answers) => {
    const ok = answers.filter((a) => a.status === 200).map((a) => a.body);
    $("#occ-instances").textContent = ok.length ? String(Math.min(...ok.map((b) => b.instances))) : "–";
    $("#occ-workers").textContent = ok.length ? String(Math.min(...ok.map((b) => b.workers))) : "–";
    $("#occ-complete").textContent = ok.length ? (ok.every((b) => b.complete) ? "yes" : "no: counts may be short") : "–";
  };

  function row(a) {
    const li = document.createElement("li");
    li.dataset.channel = a.channel;
    const name = document.createElement("span");
    name.textContent = a.channel;
    const count = document.createElement("b");
    count.className = "occ-count";
    count.textContent = a.status === 200 ? String(a.body.subscribers) : "–";
    if (a.status !== 200) count.title = `${a.body.error ?? `HTTP ${a.status}`}: ${a.body.message ?? ""}`;
    li.append(name, count);
    const patterns = Object.entries(a.status === 200 ? (a.body.patterns ?? {}) : {});
    // A channel's own count alone says nothing more than the total: list the patterns when there is more.
    if (patterns.length > 1 || (patterns.length === 1 && patterns[0][0] !== a.channel)) {
      const ol = document.createElement("ol");
      ol.className = "occ-top muted";
      for (const [p, n] of patterns.sort((x, y) => y[1] - x[1]).slice(0, TOP)) {
        const item = document.createElement("li");
        item.dataset.pattern = p;
        item.textContent = `${p} ${n}`;
        ol.append(item);
      }
      if (patterns.length > TOP || a.body.truncated) ol.append(Object.assign(document.createElement("li"), { textContent: "…" }));
      li.append(ol);
    }
    return li;
  }

  async function poll() {
    timer = undefined;
    const asked = channels().slice(0, MAX_ASKED);
    if (asked.length === 0) {
      $("#occ-subs").replaceChildren();
      coverage([]);
      note("idle", "subscribe to see how many subscribers a channel has");
      return schedule(POLL_MS);
    }
    inFlight = true;
    const answers = await Promise.all(asked.map(ask)).catch((e) => (e instanceof Error ? e : new Error(String(e))));
    inFlight = false;
    if (answers instanceof Error) {
      note("error", `occupancy unavailable: ${answers.message}`);
      return schedule(RETRY_MS);
    }
    const refused = answers.map((a) => unreachable(a.status)).find((why) => why !== undefined);
    if (refused) {
      stopped = true;
      $("#occ-subs").replaceChildren();
      coverage([]);
      return note("refused", refused);
    }
    $("#occ-subs").replaceChildren(...answers.map(row));
    coverage(answers);
    const failed = answers.find((a) => a.status !== 200);
    if (failed) note("error", `${failed.channel}: ${failed.body.error ?? `HTTP ${failed.status}`} ${failed.body.message ?? ""}`);
    else note("ok", `every ${POLL_MS / 1000} s from /v1/server/occupancy`);
    schedule(failed ? RETRY_MS : POLL_MS);
  }

  // One round at a time; none while the page is hidden (becoming visible starts the next).
  function schedule(ms) {
    if (stopped || timer || inFlight || document.visibilityState !== "visible") return;
    timer = setTimeout(poll, ms);
  }
  const now = () => {
    if (stopped || inFlight || document.visibilityState !== "visible") return;
    clearTimeout(timer);
    void poll();
  };
  document.addEventListener("visibilitychange", now);
  now();
  return { refresh: now };
}
