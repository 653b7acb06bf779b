// Capacity run: nats-server + the gateway on free loopback ports, then
//   1. Artillery ws-capacity.yml, scenario "subscriber" (connect, sub, hold with pings),
//   2. Artillery ws-capacity.yml, publish variant (5% of the VUs publish over WS, fan-out to everyone),
//   3. autocannon GET /healthz (baseline) and POST /v1/publish/{channel},
// and writes a report: a full run's to loadtest/results/capacity.md (committed), a --quick run's into its own
// temporary folder (report-path.mjs). Everything is bounded in time; traffic goes to 127.0.0.1 only.
//
//   npm run capacity            full: 2,000 VUs over 20 s, each holding 40 s; autocannon 10 s each
//   npm run capacity:quick      300 VUs over 5 s holding 5 s; autocannon 3 s each (leaves the committed report alone)
//   node loadtest/capacity/run.mjs [--quick] [--workers 1|2] [--connections 32] [--out file.md]
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync, mkdirSync, createWriteStream } from "node:fs";
import { cpus, freemem, loadavg, tmpdir, totalmem, release } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { runHttpCapacity } from "./http-publish.mjs";
import { reportPath } from "./report-path.mjs";

const HERE = import.meta.dirname;
const LOADTEST = resolve(HERE, "..");
const ROOT = resolve(LOADTEST, "..");
const COMMON = resolve(ROOT, "dist/loadtest/bench/common.js");
const ARTILLERY = resolve(LOADTEST, "node_modules/.bin/artillery");
const SCENARIO = resolve(LOADTEST, "artillery/ws-capacity.yml");
const CLK_TCK = 100;

const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    workers: { type: "string", default: "2" },
    connections: { type: "string", default: "32" },
    out: { type: "string" },
  },
});
const quick = args.quick;
const workers = Number(args.workers);
if (workers !== 1 && workers !== 2) throw new Error("--workers must be 1 or 2 (2 cores)");
const httpDuration = quick ? 3 : 10;
const artilleryTimeoutMs = quick ? 120_000 : 300_000;
const env = { ...process.env, ARTILLERY_DISABLE_TELEMETRY: "1", PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: "1", NO_COLOR: "1" };

const log = (...a) => console.log("[capacity]", ...a);

// ---------- set-up ----------

/** `npm ci` in loadtest/ when its node_modules is missing or older than its lockfile. */
function ensureLoadtestDeps() {
  const marker = resolve(LOADTEST, "node_modules/.package-lock.json");
  const lock = resolve(LOADTEST, "package-lock.json");
  if (existsSync(ARTILLERY) && existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return;
  log("installing loadtest dependencies (npm ci in loadtest/, ~2-3 min, ~600 MB)");
  const r = spawnSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: LOADTEST, env, stdio: "inherit", timeout: 15 * 60_000 });
  if (r.status !== 0) throw new Error(`npm ci in loadtest/ failed (${r.status ?? r.signal})`);
}

const children = [];
async function stopAll() {
  for (const p of children.reverse()) {
    if (p.exitCode !== null || p.signalCode !== null) continue;
    p.kill("SIGTERM");
    const gone = await Promise.race([new Promise((r) => p.once("exit", () => r(true))), new Promise((r) => setTimeout(() => r(false), 15_000))]);
    if (!gone) p.kill("SIGKILL");
  }
}
process.once("SIGINT", () => {
  void stopAll().then(() => process.exit(130));
});

// ---------- sampling ----------

/** utime+stime (ticks) of a process and all its descendants, from /proc. */
function treeTicks(pid) {
  let total = 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    total += Number(f[11]) + Number(f[12]);
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      let kids = "";
      try {
        kids = readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").trim();
      } catch {
        /* thread gone */
      }
      for (const k of kids ? kids.split(" ") : []) total += treeTicks(Number(k));
    }
  } catch {
    /* exited */
  }
  return total;
}

/** CPU ticks of this process's children that have exited and been waited for (cutime + cstime). */
function reapedChildTicks() {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(f[13]) + Number(f[14]);
}

/** Busy and total jiffies of the whole machine (/proc/stat "cpu" line). */
function machineTicks() {
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = f[3] + f[4];
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

/**
 * CPU use of our processes over an interval, in cores (1.0 = one core fully busy). `reaped` names a child
 * of this process that exits before the meter is read (Artillery): its CPU is read from our cutime/cstime.
 */
function cpuMeter(pids, reaped) {
  const t0 = performance.now();
  const m0 = machineTicks();
  const r0 = reapedChildTicks();
  const p0 = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, treeTicks(pid)]));
  const self0 = process.cpuUsage();
  return () => {
    const s = (performance.now() - t0) / 1000;
    const m1 = machineTicks();
    const out = {};
    for (const [k, pid] of Object.entries(pids)) out[k] = (treeTicks(pid) - p0[k]) / CLK_TCK / s;
    if (reaped) out[reaped] = (reapedChildTicks() - r0) / CLK_TCK / s;
    const self = process.cpuUsage(self0);
    out.runner = (self.user + self.system) / 1e6 / s;
    const machine = ((m1.busy - m0.busy) / (m1.total - m0.total)) * cpus().length;
    const ours = Object.values(out).reduce((a, b) => a + b, 0);
    out.other = Math.max(0, machine - ours);
    out.machine = machine;
    return out;
  };
}

/** Prometheus text → { name{labels}: value } (only the lines we need). */
async function scrape(port) {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5_000) });
  const text = await res.text();
  const out = {};
  for (const line of text.split("\n")) {
    if (!line.startsWith("fanout_")) continue;
    const i = line.lastIndexOf(" ");
    out[line.slice(0, i)] = Number(line.slice(i + 1));
  }
  return out;
}
/**
 * Upper bounds of the buckets holding the quantiles `qs` of a Prometheus histogram, over the difference
 * of two scrapes: "p50 ≤ 1 ms". Returns undefined when nothing was observed.
 */
function histQuantiles(before, after, name, qs = [0.5, 0.99, 0.999]) {
  const buckets = Object.keys(after)
    .filter((k) => k.startsWith(`${name}_bucket{`))
    .map((k) => {
      const le = /le="([^"]+)"/.exec(k)[1];
      return { le: le === "+Inf" ? Infinity : Number(le), count: after[k] - (before[k] ?? 0) };
    })
    .sort((a, b) => a.le - b.le);
  const total = buckets.at(-1)?.count ?? 0;
  if (!total) return undefined;
  return { n: total, q: qs.map((q) => [q, buckets.find((b) => b.count >= q * total).le]) };
}
const fmtHist = (h) =>
  h ? h.q.map(([q, le]) => `p${q * 100} ≤ ${le === Infinity ? "∞" : n(le * 1000, le < 0.001 ? 1 : 0)} ms`).join(", ") + ` (n = ${n(h.n)})` : "–";

const sumOf = (m, prefix) =>
  Object.entries(m)
    .filter(([k]) => k === prefix || k.startsWith(prefix + "{"))
    .reduce((a, [, v]) => a + v, 0);

// ---------- artillery ----------

async function runArtillery(name, port, extra, dir, pids) {
  const output = join(dir, `${name}.json`);
  const logFile = join(dir, `${name}.log`);
  const argv = ["run", SCENARIO, "--target", `ws://127.0.0.1:${port}/ws`, "--output", output, ...(quick ? ["-e", "quick"] : []), ...extra];
  log(`artillery ${name}: ${argv.slice(2).join(" ")} (log ${logFile})`);
  const before = await scrape(port);
  const proc = spawn(ARTILLERY, argv, { cwd: LOADTEST, env, stdio: ["ignore", "pipe", "pipe"] });
  const logStream = createWriteStream(logFile);
  proc.stdout.pipe(logStream);
  proc.stderr.pipe(logStream);
  const meter = cpuMeter(pids, "artillery");
  const started = Date.now();
  let peakConnections = 0;
  let peakSubscriptions = 0;
  const timeline = [];
  const exited = new Promise((r) => proc.once("exit", (code, signal) => r({ code, signal })));
  let done = null;
  void exited.then((e) => {
    done = e;
  });
  // Sample once a second while Artillery runs, bounded by its time limit.
  while (!done && Date.now() - started < artilleryTimeoutMs) {
    try {
      const m = await scrape(port);
      const c = sumOf(m, "fanout_connections");
      const s = sumOf(m, "fanout_subscriptions");
      peakConnections = Math.max(peakConnections, c);
      peakSubscriptions = Math.max(peakSubscriptions, s);
      timeline.push([Math.round((Date.now() - started) / 1000), c]);
    } catch {
      /* a slow scrape under load: skip this sample */
    }
    await Promise.race([exited, new Promise((r) => setTimeout(r, 1_000))]);
  }
  if (!done) {
    proc.kill("SIGTERM");
    log(`artillery ${name} exceeded ${artilleryTimeoutMs / 1000} s: stopped`);
  }
  const exit = await exited;
  const cpu = meter();
  const after = await scrape(port);
  if (!existsSync(output)) throw new Error(`artillery ${name} wrote no report (exit ${exit.code ?? exit.signal}); see ${logFile}`);
  const report = JSON.parse(readFileSync(output, "utf8"));
  const delta = (p) => sumOf(after, p) - sumOf(before, p);
  return {
    name,
    argv,
    exit,
    wallS: (Date.now() - started) / 1000,
    peakConnections,
    peakSubscriptions,
    timeline,
    cpu,
    gateway: {
      framesDelivered: delta("fanout_frames_delivered_total"),
      dropped: delta("fanout_deliveries_dropped_total"),
      slowClosed: delta("fanout_slow_consumer_closed_total"),
      publishes: delta("fanout_publishes_total"),
      deliveryLatency: histQuantiles(before, after, "fanout_delivery_latency_seconds"),
      publishDuration: histQuantiles(before, after, "fanout_publish_duration_seconds"),
    },
    aggregate: report.aggregate,
    output,
  };
}

// ---------- report ----------

const n = (v, d = 0) =>
  v === undefined || v === null || Number.isNaN(v) ? "–" : Number(v).toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
const pct = (s, d = 1) => (s ? `${n(s.p50 ?? s.median, d)} / ${n(s.p95, d)} / ${n(s.p99, d)} / ${n(s.p999, d)} / ${n(s.max, d)}` : "–");
const cpuLine = (c) =>
  Object.entries(c)
    .map(([k, v]) => `${k} ${n(v, 2)}`)
    .join(", ");

function artillerySection(r, title, hold) {
  const c = r.aggregate.counters ?? {};
  const s = r.aggregate.summaries ?? {};
  const errors = Object.entries(c).filter(([k]) => k.startsWith("errors."));
  const errs = Object.entries(c).filter(([k]) => k.startsWith("fgw.err."));
  const activeS = ((r.aggregate.lastMetricAt ?? 0) - (r.aggregate.firstMetricAt ?? 0)) / 1000;
  const rows = [
    ["VUs created / completed / failed", `${n(c["vusers.created"])} / ${n(c["vusers.completed"])} / ${n(c["vusers.failed"] ?? 0)}`],
    [
      "by scenario",
      Object.entries(c)
        .filter(([k]) => k.startsWith("vusers.created_by_name."))
        .map(([k, v]) => `${k.slice(23)} ${n(v)}`)
        .join(", "),
    ],
    ["errors (Artillery `errors.*`)", errors.length ? errors.map(([k, v]) => `${k.slice(7)}: ${n(v)}`).join("; ") : "0"],
    ["`err` frames from the gateway", errs.length ? errs.map(([k, v]) => `${k.slice(8)}: ${n(v)}`).join("; ") : "0"],
    ["peak open connections (gateway `fanout_connections`, 1 s samples)", n(r.peakConnections)],
    ["peak subscriptions (gateway `fanout_subscriptions`)", n(r.peakSubscriptions)],
    ["connect ms p50 / p95 / p99 / p99.9 / max (`fgw.connect_ms`)", pct(s["fgw.connect_ms"])],
    ["sub ack ms (`fgw.sub_ack_ms`)", pct(s["fgw.sub_ack_ms"])],
    ["ping round trip ms (`fgw.ping_rtt_ms`)", pct(s["fgw.ping_rtt_ms"])],
    [`session length ms (\`vusers.session_length\`, nominal ${n(hold * 1000)})`, pct(s["vusers.session_length"], 0)],
    ["frames sent by VUs (`websocket.messages_sent`)", n(c["websocket.messages_sent"])],
  ];
  if (s["fgw.pub_ack_ms"]) {
    rows.push(
      ["WS publishes acknowledged (`fgw.pub_acked`)", n(c["fgw.pub_acked"])],
      ["WS publish ack ms (`fgw.pub_ack_ms`)", pct(s["fgw.pub_ack_ms"])],
      ["messages received by VUs (`fgw.msgs_received`)", n(c["fgw.msgs_received"])],
      ["frames handed to sockets by the gateway (`fanout_frames_delivered_total` Δ)", n(r.gateway.framesDelivered)],
      ["deliveries dropped for backpressure / sockets closed 4008", `${n(r.gateway.dropped)} / ${n(r.gateway.slowClosed)}`],
      ["delivery ms, broker timestamp → VU (`fgw.delivery_ms`)", pct(s["fgw.delivery_ms"])],
      ["gateway side: broker timestamp → frame handed to uWS (`fanout_delivery_latency_seconds`, bucket bounds)", fmtHist(r.gateway.deliveryLatency)],
      ["gateway side: JetStream publish until ack (`fanout_publish_duration_seconds`, bucket bounds)", fmtHist(r.gateway.publishDuration)],
    );
  }
  rows.push(
    ["Artillery active period / wall time incl. its start-up", `${n(activeS, 1)} s / ${n(r.wallS, 1)} s`],
    ["CPU in cores (2 = both cores busy)", cpuLine(r.cpu)],
  );
  return [
    `### ${title}`,
    "",
    `\`artillery ${r.argv
      .join(" ")
      .replace(SCENARIO, "artillery/ws-capacity.yml")
      .replace(/--output \S+/, "--output <tmp>.json")}\``,
    "",
    "| figure | value |",
    "|---|---|",
    ...rows.map(([a, b]) => `| ${a} | ${b} |`),
    "",
    `Open connections over time (s → sockets): ${thin(r.timeline)
      .map(([t, v]) => `${t}→${v}`)
      .join(", ")}`,
    "",
  ].join("\n");
}

/** At most ~16 points of the timeline, always with the peak. */
function thin(tl) {
  if (tl.length <= 16) return tl;
  const step = Math.ceil(tl.length / 16);
  const peak = tl.reduce((a, b) => (b[1] > a[1] ? b : a));
  return tl.filter((p, i) => i % step === 0 || p === peak || i === tl.length - 1);
}

function httpSection(h) {
  const row = (x) =>
    `| ${x.title} | ${n(x.requests)} | ${n(x.reqPerSec)} | ${n(x.p50)} | ${n(x.p99)} | ${n(x.p999)} | ${n(x.max)} | ${n(x.non2xx)} | ${n(x.errors)} / ${n(x.timeouts)} |`;
  return [
    "### HTTP (autocannon)",
    "",
    `${h.healthz.connections} connections, ${n(h.healthz.durationS, 1)} s each, pipelining 1; publish body ${h.bodyBytes} bytes of JSON. Latency in ms (autocannon's resolution is 1 ms).`,
    "",
    "| run | requests | req/s | p50 | p99 | p99.9 | max | non-2xx | errors / timeouts |",
    "|---|---|---|---|---|---|---|---|---|",
    row(h.healthz),
    row(h.publish),
    "",
    `- **publish / healthz throughput ratio: ${n(h.ratio.reqPerSec, 3)}** (p50 latency ×${n(h.ratio.p50, 1)}, p99 ×${n(h.ratio.p99, 1)}).`,
    `- Gateway side, JetStream publish until ack (\`fanout_publish_duration_seconds\`, bucket bounds): ${fmtHist(h.publishDuration)}.`,
    `- Messages stored in the stream during the publish run: ${n(h.stored)} (2xx responses: ${n(h.publish.ok2xx)}; requests still in flight when autocannon stops are stored but not counted, at most one per connection).`,
    `- CPU in cores, healthz: ${cpuLine(h.cpu.healthz)}`,
    `- CPU in cores, publish: ${cpuLine(h.cpu.publish)}`,
    "",
  ].join("\n");
}

function natsVersion() {
  const r = spawnSync(resolve(ROOT, ".tools/bin/nats-server"), ["--version"], { encoding: "utf8" });
  return (r.stdout || r.stderr || "").trim();
}

function writeReport(ctx) {
  const { sub, pub, http, startedAt, load0, out } = ctx;
  const holdS = quick ? 5 + 1 : 40 + 1;
  const md = [
    `# Capacity run (${quick ? "quick" : "full"}) — ${startedAt}`,
    "",
    "Written by `loadtest/capacity/run.mjs`; what each figure means: [loadtest/CAPACITY.md](../CAPACITY.md).",
    "",
    "## Machine",
    "",
    `- ${cpus().length} × ${cpus()[0]?.model ?? "?"}, ${n(totalmem() / 2 ** 30, 1)} GiB RAM (${n(freemem() / 2 ** 30, 1)} GiB free at the end), Linux ${release()}, Node ${process.version}, ${natsVersion()}.`,
    `- **The ${cpus().length} cores are shared** by nats-server (JetStream, file storage), the gateway (primary + ${workers} worker${workers > 1 ? "s" : ""}), Artillery (one local worker thread) and autocannon (in the runner). Nothing here is a per-core figure of the gateway alone; the CPU lines show who used what ("other" = processes outside this run).`,
    `- Load average when the run started: ${load0.map((x) => n(x, 2)).join(" / ")} (1/5/15 min).`,
    `- Gateway flags: \`--workers ${workers} --max-connections-per-ip=-1 --connect-rate-per-ip=-1 --frame-rate=-1\` (every client is 127.0.0.1), auth off, stream FANOUT_CHANNELS R1 file storage.`,
    "",
    "## WebSocket (Artillery 2.0.21, `loadtest/artillery/ws-capacity.yml`)",
    "",
    quick
      ? "Quick: 300 VUs arrive over 5 s, each holds 5 s (one ping or publish) + 1 s."
      : "2,000 VUs arrive evenly over 20 s; each holds 40 s (8 × 5 s, a ping or publish after each 5 s) + 1 s: open sockets climb to 2,000 at ~20 s, stay there until ~40 s and drain by ~61 s.",
    "Percentiles are p50 / p95 / p99 / p99.9 / max in ms, measured in the Artillery VU (its event loop included).",
    "",
    artillerySection(sub, "Subscribe and hold, with pings (scenario `subscriber`)", holdS),
    artillerySection(pub, "Publish variant: 19 subscribers : 1 publisher (`publisherWeight` 1), everyone subscribed to `cap.x`", holdS),
    "## HTTP publish",
    "",
    httpSection(http),
  ].join("\n");
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, md);
  log(`wrote ${out}`);
}

// ---------- main ----------

async function main() {
  ensureLoadtestDeps();
  if (!existsSync(COMMON)) throw new Error(`${COMMON} missing: run \`npm run build\` first (npm run capacity does)`);
  const { startNats, startGatewayProc } = await import(COMMON);
  const startedAt = new Date().toISOString();
  const load0 = loadavg();
  const dir = mkdtempSync(join(tmpdir(), "fgw-capacity-"));
  const nats = await startNats();
  children.push(nats.proc);
  const gw = await startGatewayProc(nats.url, workers);
  children.push(gw.proc);
  log(`nats ${nats.url}, gateway :${gw.port} (${workers} workers); raw reports in ${dir}`);
  const pids = { nats: nats.proc.pid, gateway: gw.proc.pid };

  const sub = await runArtillery("subscriber", gw.port, ["--scenario-name", "subscriber"], dir, pids);
  const pub = await runArtillery("publish", gw.port, ["-v", JSON.stringify({ subscriberWeight: 19, publisherWeight: 1 })], dir, pids);

  log(`autocannon: healthz then publish, ${httpDuration} s each, ${args.connections} connections`);
  const before = await scrape(gw.port);
  const http = await runHttpCapacity({ port: gw.port, duration: httpDuration, connections: Number(args.connections), meter: () => cpuMeter(pids) });
  http.publishDuration = histQuantiles(before, await scrape(gw.port), "fanout_publish_duration_seconds");
  writeFileSync(join(dir, "autocannon.json"), JSON.stringify(http.raw, null, 2));

  writeReport({ sub, pub, http, startedAt, load0, out: reportPath(args, { resultsDir: resolve(LOADTEST, "results"), runDir: dir }) });
}

try {
  await main();
} finally {
  await stopAll();
}
