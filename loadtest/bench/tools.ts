// bench:tools — do the load tools measure the gateway, or themselves? In one run, against one gateway
// (2 workers, embedded-style nats-server), with the real sub-cluster and pub-cluster:
//   1. CPU per delivery: C clients × R msg/s with each engine (native: Go processes with kernel receive
//      timestamps; lean: Node on plain TCP sockets; ws: the `ws` package), the processes' CPU and the gateway's.
//   2. Latency: one client at 1 msg/s, then 800 clients at 1 msg/s with each engine: MEAN against the single
//      client's.
// Writes loadtest/results/tools.md. Usage: node dist/loadtest/bench/tools.js [--quick] [--seconds 20]
//   [--clients 800] [--rate 100] [--engines native,lean,ws] [--native-procs 1] [--lean-procs 2] [--ws-procs 8] [--rounds 3] [--out FILE] [--render tools.json]
// The rows are repeated for --rounds rounds (engines alternating which goes first) and the targets judged on
// medians: on a shared 2-core machine one round moves by tens of percent.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { fmt, ROOT, startGatewayProc, startNats } from "./common.js";
import { bounded, PUB_CLI, runNode, SUB_CLI, TreeCpu } from "../compare/proc.js";
import { LatencyStats } from "../../subtools/src/stats.js";
import type { SubResult } from "../../subtools/src/result.js";

const log = (s: string): void => console.log(`[bench:tools] ${s}`);

type Engine = "native" | "lean" | "ws";

type Row = {
  /** Which round of the run (rows repeat per round). */
  round?: number;
  name: string;
  engine: Engine;
  clients: number;
  procs: number;
  rate: number;
  seconds: number;
  received: number;
  expected: number;
  lost: number;
  meanMs: number;
  hmeanMs: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  toolS: number;
  gatewayS: number;
  brokerS: number;
  wallS: number;
  toolUsPerDelivery: number;
  gatewayUsPerDelivery: number;
  load: number;
};

async function row(name: string, engine: Engine, clients: number, procs: number, rate: number, seconds: number, port: number, gwPid: number, work: string): Promise<Row> {
  const per = Math.ceil(clients / procs);
  const channel = `tools.${name.replace(/\W+/g, "-")}.${Date.now()}`;
  const json = join(work, `${channel}.json`);
  const sub = runNode([SUB_CLI, "-c", String(procs), "-n", String(per), "-p", String(port), "--channel", channel, "--engine", engine, "-d", String(seconds + 60), "--idle", "10", "--json", json]);
  const total = procs * per;
  const deadline = Date.now() + 60_000;
  while (!sub.out().includes(`clients ${total}/${total} `)) {
    if (sub.child.exitCode !== null) throw new Error(`sub-cluster exited: ${sub.out().slice(-2000)}`);
    if (Date.now() > deadline) throw new Error(`${total} clients did not connect in 60 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const subCpu = new TreeCpu(sub.child.pid!).start();
  const gwCpu = new TreeCpu(gwPid).start();
  const intervalMs = Math.max(1, Math.round(1000 / rate));
  const pub = runNode([PUB_CLI, "-t", String(intervalMs), "-n", "1", "-c", "1", "-p", String(Math.round(rate * seconds)), "--port", String(port), "--channel", channel, "--quiet"]);
  await bounded(pub, (seconds * 2 + 30) * 1000);
  await bounded(sub, 70_000);
  const s = subCpu.end();
  const g = gwCpu.end();
  const r = JSON.parse(readFileSync(json, "utf8")) as SubResult;
  const lat = LatencyStats.fromJSON(r.latency);
  const received = r.counts.received;
  const out: Row = {
    name, engine, clients: total, procs, rate, seconds, received, expected: r.counts.expected, lost: r.counts.lost,
    meanMs: lat.meanUs / 1000, hmeanMs: lat.harmonicMeanUs / 1000, p50Ms: lat.percentileUs(50) / 1000, p99Ms: lat.percentileUs(99) / 1000, maxMs: lat.max / 1000,
    toolS: s.nodeS, gatewayS: g.nodeS, brokerS: g.brokerS, wallS: g.wallS,
    toolUsPerDelivery: received ? (s.nodeS * 1e6) / received : NaN,
    gatewayUsPerDelivery: received ? (g.nodeS * 1e6) / received : NaN,
    load: loadavg()[0]!,
  };
  log(`${name}: ${fmt(received)}/${fmt(out.expected)} lost ${out.lost} | MEAN ${out.meanMs.toFixed(2)} ms HMEAN ${out.hmeanMs.toFixed(2)} p99 ${out.p99Ms.toFixed(2)} | tool ${out.toolUsPerDelivery.toFixed(2)} µs/delivery, gateway ${out.gatewayUsPerDelivery.toFixed(2)} µs/delivery | load ${out.load.toFixed(1)}`);
  return out;
}

function markdown(rows: Row[], meta: { started: Date; seconds: number; cores: number; cpu: string; quick: boolean }): string {
  const L: string[] = [];
  const ms = (v: number): string => (Number.isFinite(v) ? (v < 10 ? v.toFixed(2) : v.toFixed(1)) : "—");
  L.push("# bench:tools — the load tools' own cost, next to the gateway's");
  L.push("");
  L.push(`Measured ${meta.started.toISOString().slice(0, 16).replace("T", " ")} UTC by \`npm run bench:tools${meta.quick ? " -- --quick" : ""}\` on ${meta.cores} cores (${meta.cpu}), ` +
    `shared by nats-server, the gateway (2 workers), the subscriber processes and the publisher. ${meta.seconds} s of publishing per row, one gateway for the whole run.`);
  L.push("");
  L.push("CPU is read from `/proc` (user + system, so the kernel's share of reading sockets counts) over the publishing and the drain, " +
    "for the whole `sub-cluster` tree (master and processes) and for the gateway's node processes (primary and workers; nats-server apart), " +
    "and divided by the deliveries counted. Latency is receive time − send time, every delivery, as sub-cluster reports it: " +
    "for the native engine the receive time is the kernel's stamp when the bytes reached the socket (SO_TIMESTAMPNS), for lean and ws the moment the process read them.");
  L.push("");
  L.push("| round | row | engine | clients (processes) | msg/s | received / expected | MEAN ms | HARMONIC MEAN ms | p50 ms | p99 ms | MAX ms | tool µs CPU / delivery | gateway µs CPU / delivery | tool ÷ gateway | load avg |");
  L.push("|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const r of rows) {
    // Below ~10,000 deliveries/s the processes' idle work (timers, ticks) outweighs the deliveries: no per-delivery figure.
    const cpuShown = r.received / r.wallS >= 10_000;
    const cpuCells = cpuShown ? `**${r.toolUsPerDelivery.toFixed(2)}** | ${r.gatewayUsPerDelivery.toFixed(2)} | ${(r.toolUsPerDelivery / r.gatewayUsPerDelivery).toFixed(2)}` : "— | — | —";
    L.push(`| ${r.round ?? 1} | ${r.name} | ${r.engine} | ${fmt(r.clients)} (${r.procs}) | ${r.rate} | ${fmt(r.received)} / ${fmt(r.expected)} | **${ms(r.meanMs)}** | ${ms(r.hmeanMs)} | ${ms(r.p50Ms)} | ${ms(r.p99Ms)} | ${ms(r.maxMs)} | ${cpuCells} | ${r.load.toFixed(1)} |`);
  }
  L.push("");
  L.push("CPU per delivery is shown for rows of 10,000 deliveries/s or more; below that the processes' fixed work (timers, the one-second reports) outweighs the deliveries.");
  L.push("");
  const med = (xs: number[]): number => { const a = [...xs].sort((x, y) => x - y); return a.length ? (a.length % 2 ? a[(a.length - 1) / 2]! : (a[a.length / 2 - 1]! + a[a.length / 2]!) / 2) : NaN; };
  const rounds = [...new Set(rows.map((r) => r.round ?? 1))];
  const hot = (engine: string): Row[] => rows.filter((r) => r.engine === engine && r.rate > 1 && r.clients > 1);
  const ratios = (engine: string): number[] => hot(engine).map((r) => r.toolUsPerDelivery / r.gatewayUsPerDelivery);
  const gapsOf = (engine: string): number[] => rounds.flatMap((k) => {
    const single = rows.find((r) => (r.round ?? 1) === k && r.name === "single client");
    const many = rows.find((r) => (r.round ?? 1) === k && r.name.endsWith("× 1/s") && r.engine === engine);
    return single && many ? [many.meanMs - single.meanMs] : [];
  });
  const list = (xs: number[], d: number): string => xs.map((x) => x.toFixed(d)).join(", ");
  const engines = (["native", "lean", "ws"] as const).filter((e) => rows.some((r) => r.engine === e));
  const judged = engines[0];
  const single = rows.find((r) => r.name === "single client");
  L.push(`Targets (${rounds.length} round${rounds.length === 1 ? "" : "s"}, each a fresh set of rows against the same gateway; medians), judged on the ${judged} engine, the others beside it:`);
  L.push("");
  if (judged && ratios(judged).length) {
    const rest = engines.slice(1).filter((e) => ratios(e).length).map((e) => `${e}: ${list(ratios(e), 2)}, median ${med(ratios(e)).toFixed(2)}×`);
    const m = med(ratios(judged));
    L.push(`- tool CPU per delivery ≤ the gateway's, at ${fmt(hot(judged)[0]!.clients)} × ${hot(judged)[0]!.rate} msg/s: ${judged} engine ${list(ratios(judged), 2)} × the gateway's per round, median **${m.toFixed(2)}×** — **${m <= 1 ? "met" : "not met"}**` + (rest.length ? ` (${rest.join("; ")})` : ""));
  }
  if (judged && single && gapsOf(judged).length) {
    const rest = engines.slice(1).filter((e) => gapsOf(e).length).map((e) => `${e}: ${list(gapsOf(e), 2)} ms, median ${med(gapsOf(e)).toFixed(2)} ms`);
    const m = med(gapsOf(judged));
    L.push(`- 800 × 1 msg/s with MEAN within 2 ms of a single client's (single client on the ${single.engine} engine): the ${judged} engine's MEAN exceeded it by ${list(gapsOf(judged), 2)} ms per round, median **${m.toFixed(2)} ms** — **${m <= 2 ? "met" : "not met"}**` + (rest.length ? ` (${rest.join("; ")})` : ""));
  }
  L.push("");
  return L.join("\n");
}

async function main(): Promise<void> {
  const { values: v } = parseArgs({ options: {
    quick: { type: "boolean", default: false }, seconds: { type: "string" }, clients: { type: "string", default: "800" }, rate: { type: "string", default: "100" },
    "lean-procs": { type: "string", default: "2" }, "native-procs": { type: "string", default: "1" }, engines: { type: "string", default: "native,lean,ws" }, rounds: { type: "string" }, "ws-procs": { type: "string", default: "8" }, out: { type: "string", default: resolve(ROOT, "loadtest/results/tools.md") }, render: { type: "string" },
  } });
  if (v.render) {
    const saved = JSON.parse(readFileSync(v.render, "utf8")) as { started: string; seconds?: number; cores?: number; cpu?: string; quick?: boolean; rows: Row[] };
    const md = markdown(saved.rows, { started: new Date(saved.started), seconds: saved.seconds ?? saved.rows[0]!.seconds, cores: saved.cores ?? cpus().length, cpu: saved.cpu ?? cpus()[0]?.model ?? "?", quick: saved.quick ?? false });
    writeFileSync(v.out!, md);
    log(`rendered ${v.out} from ${v.render}`);
    return;
  }
  const seconds = Number(v.seconds ?? (v.quick ? 5 : 20));
  const rounds = Number(v.rounds ?? (v.quick ? 1 : 3));
  const clients = Number(v.clients);
  const rate = Number(v.rate);
  const leanProcs = Number(v["lean-procs"]);
  const wsProcs = Number(v["ws-procs"]);
  const nativeProcs = Number(v["native-procs"]);
  const engineList = v.engines!.split(",").map((e) => e.trim()) as Engine[];
  for (const e of engineList) if (!["native", "lean", "ws"].includes(e)) throw new Error(`--engines: unknown engine "${e}" (native, lean, ws)`);
  const procsOf = (e: Engine): number => (e === "native" ? nativeProcs : e === "lean" ? leanProcs : wsProcs);
  const singleEngine: Engine = engineList.includes("native") ? "native" : "lean";
  const work = mkdtempSync(join(tmpdir(), "fgw-bench-tools-"));
  const started = new Date();
  const nats = await startNats();
  const gw = await startGatewayProc(nats.url, 2);
  const rows: Row[] = [];
  try {
    log(`gateway on port ${gw.port}; ${seconds} s per row`);
    for (let k = 1; k <= rounds; k++) {
      const add = async (p: Promise<Row>): Promise<void> => { rows.push({ ...(await p), round: k }); };
      // Engines alternate which goes first, so neither always meets the machine in the same state.
      const engines = k % 2 ? engineList : [...engineList].reverse();
      for (const e of engines) await add(row(`${fmt(clients)} × ${rate}/s`, e, clients, procsOf(e), rate, seconds, gw.port, gw.proc.pid!, work));
      await add(row("single client", singleEngine, 1, 1, 1, Math.max(seconds, 10), gw.port, gw.proc.pid!, work));
      for (const e of engines) await add(row(`${fmt(clients)} × 1/s`, e, clients, procsOf(e), 1, Math.max(seconds, 10), gw.port, gw.proc.pid!, work));
    }
  } finally {
    gw.proc.kill("SIGTERM");
    nats.proc.kill("SIGTERM");
    rmSync(work, { recursive: true, force: true });
  }
  const md = markdown(rows, { started, seconds, cores: cpus().length, cpu: cpus()[0]?.model ?? "?", quick: v.quick! });
  writeFileSync(v.out!, md);
  writeFileSync(v.out!.replace(/\.md$/, ".json"), JSON.stringify({ started, seconds, cores: cpus().length, cpu: cpus()[0]?.model ?? "?", quick: v.quick, rows }, null, 2) + "\n");
  console.log(md);
  log(`wrote ${v.out}`);
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
