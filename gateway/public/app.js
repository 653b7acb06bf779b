// The live page: a console on the client SDK (subscribe, publish, messages), live charts and a status panel
// fed by GET /v1/stats once a second, and the subscribers of the page's channels (occupancy.js). Plain DOM, no
// framework; message rows are batched so a busy channel stays cheap. The charts load on their own: without
// them (library missing) the console still works.
import { GatewayClient } from "/client.js";
import { occupancyPanel } from "/occupancy.js";

const MAX_ROWS = 500;
const $ = (id) => document.getElementById(id);
const wsUrl = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`;
const gw = new GatewayClient(wsUrl, { minDelayMs: 100, maxDelayMs: 5000 });
window.gateway = gw; // for poking at it from the devtools console

// --- connection state and events -------------------------------------------------------------
const state = $("conn-state");
const setState = (s, detail = "") => {
  state.dataset.state = s;
  state.textContent = s;
  $("conn-detail").textContent = detail;
};
const logEvent = (text, cls) => {
  const li = document.createElement("li");
  li.textContent = `${new Date().toLocaleTimeString()} ${text}`;
  if (cls) li.className = cls;
  $("events").prepend(li);
  while ($("events").children.length > 50) $("events").lastChild.remove();
};
let gaps = 0;
gw.on("connecting", (e) => setState("connecting", e.attempt > 0 ? `attempt ${e.attempt + 1}` : ""));
gw.on("connected", () => setState("connected", wsUrl));
gw.on("disconnected", (e) => {
  setState(e.willReconnect ? "reconnecting" : "closed", `closed ${e.code}${e.reason ? ` ${e.reason}` : ""}`);
  logEvent(`disconnected ${e.code}${e.willReconnect ? `, retry in ${e.reconnectInMs} ms` : ""}`);
  $("page-reconnects").textContent = String(gw.stats.reconnects);
});
gw.on("resubscribed", (e) => {
  $("page-reconnects").textContent = String(gw.stats.reconnects);
  if (e.subscriptions > 0) logEvent(`resubscribed ${e.subscriptions}`);
});
gw.on("gap", (e) => {
  $("page-gaps").textContent = String(++gaps);
  logEvent(`gap on ${e.channel}: wanted seq ${e.expectedSeq}, stream starts at ${e.firstSeq}`, "error");
});
gw.on("error", (e) => logEvent(`${e.channel ? `${e.channel}: ` : ""}${e.error.code}: ${e.error.message}`, "error"));
gw.connect();

// --- messages ------------------------------------------------------------------------------------
const tbody = document.querySelector("#messages tbody");
let pendingRows = [];
let flushTimer;
let received = 0;
const onMessage = (m) => {
  pendingRows.push(m);
  flushTimer ??= setTimeout(flushRows, 50);
};
function flushRows() {
  flushTimer = undefined;
  const frag = document.createDocumentFragment();
  for (const m of pendingRows.slice(-MAX_ROWS).reverse()) {
    const tr = document.createElement("tr");
    tr.dataset.seq = String(m.seq);
    tr.dataset.channel = m.channel;
    tr.className = "fresh";
    for (const text of [
      String(m.seq),
      new Date(m.ts).toLocaleTimeString(),
      m.channel,
      typeof m.data === "string" && m.enc === "text" ? m.data : JSON.stringify(m.data),
    ]) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.append(td);
    }
    frag.append(tr);
  }
  received += pendingRows.length;
  pendingRows = [];
  for (const tr of tbody.querySelectorAll("tr.fresh")) tr.className = "";
  tbody.prepend(frag);
  while (tbody.children.length > MAX_ROWS) tbody.lastChild.remove();
  $("msg-count").textContent = String(received);
  $("page-dupes").textContent = String(gw.stats.duplicatesDropped);
  renderSubs();
}

// --- subscribe -----------------------------------------------------------------------------------
const subs = new Map();
$("sub-start").addEventListener("change", () => {
  $("sub-value").disabled = !["seq", "last"].includes($("sub-start").value);
});
$("sub-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const channel = $("sub-channel").value.trim();
  const start = $("sub-start").value;
  const n = Number($("sub-value").value);
  const from = start === "seq" ? { seq: n } : start === "last" ? { last: n } : start === "all" ? "all" : undefined;
  if (subs.has(channel)) return logEvent(`already subscribed to ${channel}`, "error");
  let sub;
  try {
    sub = gw.subscribe(channel, onMessage, { from });
  } catch (e) {
    return logEvent(e.message, "error");
  }
  subs.set(channel, sub);
  renderSubs();
  occupancy.refresh();
  sub.ready.then(
    (r) => logEvent(`subscribed ${channel} (stream ${r.firstSeq ?? "?"}..${r.lastSeq ?? "?"})`),
    () => {
      subs.delete(channel);
      renderSubs();
    },
  );
});
function renderSubs() {
  const ul = $("subs");
  ul.replaceChildren(
    ...[...subs.values()].map((sub) => {
      const li = document.createElement("li");
      li.dataset.channel = sub.channel;
      const name = document.createElement("span");
      name.textContent = sub.channel;
      const last = document.createElement("span");
      last.className = "muted";
      last.textContent = sub.lastSeq ? `last seq ${sub.lastSeq}` : "";
      const btn = document.createElement("button");
      btn.type = "button";
      btn.textContent = "×";
      btn.title = "unsubscribe";
      btn.onclick = () => {
        sub.unsubscribe();
        subs.delete(sub.channel);
        renderSubs();
      };
      li.append(btn, name, last);
      return li;
    }),
  );
}

// --- occupancy: the page's channels' subscribers across the cluster (the control plane) ------------
const occupancy = occupancyPanel($("occupancy"), () => [...subs.keys()]);

// --- publish -------------------------------------------------------------------------------------
$("pub-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const out = $("pub-result");
  let data;
  try {
    data = JSON.parse($("pub-data").value);
  } catch (e) {
    out.textContent = `not JSON: ${e.message}`;
    out.className = "error";
    return;
  }
  out.className = "muted";
  out.textContent = "…";
  try {
    const r = await gw.publish($("pub-channel").value.trim(), data);
    out.textContent = `seq ${r.seq}${r.duplicate ? " (duplicate)" : ""}`;
  } catch (e) {
    out.textContent = `${e.code ?? "error"}: ${e.message}`;
    out.className = "error";
  }
});

// --- charts --------------------------------------------------------------------------------------
let charts;
import("/charts.js").then(
  (m) => {
    charts = m.liveCharts($("charts"));
    window.liveCharts = charts; // the browser test reads the plotted series
  },
  (e) => ($("charts-note").textContent = `charts unavailable: ${e.message}`),
);

// --- status panel --------------------------------------------------------------------------------
const fmt = (v, unit = "") => (v === null || v === undefined ? "–" : `${v}${unit}`);
async function refreshStats() {
  try {
    const r = await fetch("/v1/stats", { cache: "no-store" });
    if (!r.ok) throw new Error(`HTTP ${r.status}`);
    const s = await r.json();
    $("stat-workers").textContent = fmt(s.workers);
    $("stat-connections").textContent = fmt(s.connections);
    $("stat-sse").textContent = fmt(s.sseStreams);
    $("stat-channels").textContent = fmt(s.channels);
    $("stat-subscriptions").textContent = fmt(s.subscriptions);
    $("stat-in").textContent = fmt(s.rates?.publishesPerSec);
    $("stat-broker").textContent = fmt(s.rates?.brokerMessagesPerSec);
    $("stat-out").textContent = fmt(s.rates?.framesOutPerSec);
    $("stat-dropped").textContent = fmt(s.rates?.droppedPerSec);
    $("stat-p50").textContent = fmt(s.latencyMs.p50, " ms");
    $("stat-p90").textContent = fmt(s.latencyMs.p90, " ms");
    $("stat-p99").textContent = fmt(s.latencyMs.p99, " ms");
    showWebhook(s.webhook);
    showRegions(s.regions);
    charts?.push(s);
    if (charts) $("charts-note").textContent = "";
    $("stat-note").textContent = `rates over ${s.windowMs ?? "–"} ms; latency over ${s.latencyMs.over} (${s.latencyMs.observations} msgs)`;
  } catch (e) {
    $("stat-note").textContent = `stats unavailable: ${e.message}`;
    // With authentication on, /v1/stats is served by the admin listener only, not on this port.
    if (charts) $("charts-note").textContent = `no data: /v1/stats ${e.message}`;
  } finally {
    setTimeout(refreshStats, 1000);
  }
}
refreshStats();

/** Regions: each of this region's mirrors' lag (`regions` in /v1/stats; null without mirrors). */
function showRegions(r) {
  $("regions").hidden = !r;
  if (!r) return;
  const dl = $("region-mirrors");
  dl.replaceChildren();
  for (const m of r.mirrors) {
    const dt = document.createElement("dt");
    dt.textContent = m.stream;
    const dd = document.createElement("dd");
    dd.textContent = fmt(m.lag);
    dl.append(dt, dd);
  }
}

/** The webhook sender's lag (`webhook` in /v1/stats; null when this instance runs none). */
function showWebhook(w) {
  $("webhook").hidden = !w;
  if (!w) return;
  $("wh-pending").textContent = fmt(w.pending);
  $("wh-oldest").textContent = fmt(w.oldestPendingSeconds, " s");
  $("wh-sending").textContent = w.sending ? "yes" : "no (another instance holds the turn)";
  $("wh-calls").textContent = `${w.calls} / ${w.failures}`;
  $("wh-dropped").textContent = fmt(w.dropped);
}
