// bench:tools — do the load tools measure the gateway, or themselves? In one run, against one gateway
// (2 workers, embedded-style nats-server), with the real sub-cluster and pub-cluster:
//   1. CPU per delivery: C clients × R msg/s with each engine (native: Go processes with kernel receive
//      timestamps; lean: Node on plain TCP sockets; ws: the `ws` package), the processes' CPU and the gateway's.
//   2. Latency: one client at 1 msg/s, then 800 clients at 1 msg/s with each engine: MEAN against the single
//      client's.
//   3. The floor: the same two latency rows (single client, 800 × 1/s) with the judged engine (native if listed,
//      else lean) against bare uWebSockets.js with no broker (compare:peers' `uws` server), started
//      once for the run, in as many processes as the gateway has workers (--floor-procs). Its own MEAN excess is what
//      one send() per socket costs before any gateway work; --no-floor skips it.
// Writes loadtest/results/tools.md. Usage: npm run bench -- tools [--quick] [--seconds 20]
//   [--clients 800] [--rate 100] [--engines native,lean,ws] [--native-procs 1] [--lean-procs 2] [--ws-procs 8] [--rounds 3] [--no-floor] [--floor-procs 2]
//   [--out FILE] [--render tools.json]
// The rows are repeated for --rounds rounds (engines alternating which goes first) and the targets judged on
// medians: on a shared 2-core machine one round moves by tens of percent.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fmt, ROOT, startGatewayProc, startNats, until } from "./common.js";
import { bounded, PUB_CLI, runNode, SUB_CLI, TreeCpu, type Proc } from "../compare/proc.js";
import { LatencyStats } from "../../subtools/src/shared/mod.js";
import type { SubResult } from "../../subtools/src/result.js";
import { std } from "../kit/flags.js";
import { defineBench, runBench } from "../kit/main.js";
import { reportPath, sibling, writeReport } from "../kit/results.js";

const log = (s: string): void => console.log(`[bench:tools] ${s}`);

type Engine = "native" | "lean" | "ws";

/** The server a row ran against: the gateway, or the floor (bare uWebSockets.js, no broker). */
type ServerName = "gateway" | "bare uWS";

/** Where a row's clients connect, and whose process tree its server CPU is read from. */
type Target = { server: ServerName; port: number; pid: number };

/** The floor's rows are named like the gateway's with this prefix, so no name match picks one for the other. */
const FLOOR = "floor: ";

/** The gateway's workers in this benchmark. */
const GATEWAY_WORKERS = 2;

const procWord = (n: number): string => (n === 1 ? "one process" : `${n} processes`);

type Row = {
  /** Which round of the run (rows repeat per round). */
  round?: number;
  /** Saved runs from before the floor rows have none; they ran against the gateway (see the --render path). */
  server: ServerName;
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
  /** CPU of the row's server (named gateway* for the saved JSON): the gateway's node processes, or the bare uWS process. */
  gatewayS: number;
  brokerS: number;
  wallS: number;
  toolUsPerDelivery: number;
  gatewayUsPerDelivery: number;
  load: number;
};

/**
 * Starts the floor server on a free port in `procs` processes (as compare:peers does; its helper is not
 * exported) and waits for "ready <port>".
 */
async function startFloor(procs: number): Promise<{ proc: Proc; port: number }> {
  const proc = runNode([resolve(ROOT, "loadtest/peers/uws/server.mjs"), "--port", "0", "--procs", String(procs)]);
  try {
    const port = await until(
      () => {
        if (proc.child.exitCode !== null) throw new Error(`bare uWS server exited ${proc.child.exitCode}: ${proc.out().slice(-1500)}`);
        const m = /ready (\d+)/.exec(proc.out());
        return m ? Number(m[1]) : undefined;
      },
      60_000,
      "bare uWS server ready",
    );
    return { proc, port };
  } catch (e) {
    await proc.stop(2_000);
    throw e;
  }
}

async function row(name: string, engine: Engine, clients: number, procs: number, rate: number, seconds: number, target: Target, work: string): Promise<Row> {
  const { port } = target;
  const per = Math.ceil(clients / procs);
  const channel = `tools.${name.replace(/\W+/g, "-")}.${Date.now()}`;
  const json = join(work, `${channel}.json`);
  const sub = runNode([
    SUB_CLI,
    "-c",
    String(procs),
    "-n",
    String(per),
    "-p",
    String(port),
    "--channel",
    channel,
    "--engine",
    engine,
    "-d",
    String(seconds + 60),
    "--idle",
    "10",
    "--json",
    json,
  ]);
  const total = procs * per;
  const deadline = Date.now() + 60_000;
  while (!sub.out().includes(`clients ${total}/${total} `)) {
    if (sub.child.exitCode !== null) throw new Error(`sub-cluster exited: ${sub.out().slice(-2000)}`);
    if (Date.now() > deadline) throw new Error(`${total} clients did not connect in 60 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const subCpu = new TreeCpu(sub.child.pid!).start();
  const gwCpu = new TreeCpu(target.pid).start();
  const intervalMs = Math.max(1, Math.round(1000 / rate));
  const pub = runNode([
    PUB_CLI,
    "-t",
    String(intervalMs),
    "-n",
    "1",
    "-c",
    "1",
    "-p",
    String(Math.round(rate * seconds)),
    "--port",
    String(port),
    "--channel",
    channel,
    "--quiet",
  ]);
  await bounded(pub, (seconds * 2 + 30) * 1000);
  await bounded(sub, 70_000);
  const s = subCpu.end();
  const g = gwCpu.end();
  const r = JSON.parse(readFileSync(json, "utf8")) as SubResult;
  const lat = LatencyStats.fromJSON(r.latency);
  const received = r.counts.received;
  const out: Row = {
    server: target.server,
    name,
    engine,
    clients: total,
    procs,
    rate,
    seconds,
    received,
    expected: r.counts.expected,
    lost: r.counts.lost,
    meanMs: lat.meanUs / 1000,
    hmeanMs: lat.harmonicMeanUs / 1000,
    p50Ms: lat.percentileUs(50) / 1000,
    p99Ms: lat.percentileUs(99) / 1000,
    maxMs: lat.max / 1000,
    toolS: s.nodeS,
    gatewayS: g.nodeS,
    brokerS: g.brokerS,
    wallS: g.wallS,
    toolUsPerDelivery: received ? (s.nodeS * 1e6) / received : NaN,
    gatewayUsPerDelivery: received ? (g.nodeS * 1e6) / received : NaN,
    load: loadavg()[0]!,
  };
  log(
    `${target.server} ${name}: ${fmt(received)}/${fmt(out.expected)} lost ${out.lost} | MEAN ${out.meanMs.toFixed(2)} ms HMEAN ${out.hmeanMs.toFixed(2)} p99 ${out.p99Ms.toFixed(2)} | tool ${out.toolUsPerDelivery.toFixed(2)} µs/delivery, server ${out.gatewayUsPerDelivery.toFixed(2)} µs/delivery | load ${out.load.toFixed(1)}`,
  );
  return out;
}

type Meta = {
  started: Date;
  seconds: number;
  cores: number;
  cpu: string;
  quick: boolean;
  /** Processes of the floor server (1 in runs saved before the option). */ floorProcs: number;
};

function markdown(rows: Row[], meta: Meta): string {
  const L: string[] = [];
  const ms = (v: number): string => (Number.isFinite(v) ? (v < 10 ? v.toFixed(2) : v.toFixed(1)) : "—");
  L.push("# bench:tools — the load tools' own cost, next to the gateway's");
  L.push("");
  L.push(
    `Measured ${meta.started.toISOString().slice(0, 16).replace("T", " ")} UTC by \`npm run bench:tools${meta.quick ? " -- --quick" : ""}\` on ${meta.cores} cores (${meta.cpu}), ` +
      `shared by nats-server, the gateway (2 workers), the subscriber processes and the publisher. ${meta.seconds} s of publishing per row, one gateway for the whole run.`,
  );
  L.push("");
  L.push(
    "CPU is read from `/proc` (user + system, so the kernel's share of reading sockets counts) over the publishing and the drain, " +
      "for the whole `sub-cluster` tree (master and processes) and for the gateway's node processes (primary and workers; nats-server apart), " +
      "and divided by the deliveries counted. Latency is receive time − send time, every delivery, as sub-cluster reports it: " +
      "for the native engine the receive time is the kernel's stamp when the bytes reached the socket (SO_TIMESTAMPNS), for lean and ws the moment the process read them.",
  );
  L.push("");
  if (rows.some((r) => r.server === "bare uWS")) {
    L.push(
      `The rows on \`bare uWS\` ran against the floor: bare uWebSockets.js in ${procWord(meta.floorProcs)} with no broker, storage or checks (\`loadtest/peers/uws/server.mjs --procs ${meta.floorProcs}\`, ` +
        "compare:peers' floor; several processes share the port as the gateway's workers do, and each publishes every message to its own sockets), " +
        "started once for the run beside the gateway and driven by the same sub-cluster and pub-cluster; its server CPU is that process tree's.",
    );
    L.push("");
  }
  L.push(
    "| round | server | row | engine | clients (processes) | msg/s | received / expected | MEAN ms | HARMONIC MEAN ms | p50 ms | p99 ms | MAX ms | tool µs CPU / delivery | server µs CPU / delivery | tool ÷ server | load avg |",
  );
  L.push("|---:|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const r of rows) {
    // Below ~10,000 deliveries/s the processes' idle work (timers, ticks) outweighs the deliveries: no per-delivery figure.
    const cpuShown = r.received / r.wallS >= 10_000;
    const cpuCells = cpuShown
      ? `**${r.toolUsPerDelivery.toFixed(2)}** | ${r.gatewayUsPerDelivery.toFixed(2)} | ${(r.toolUsPerDelivery / r.gatewayUsPerDelivery).toFixed(2)}`
      : "— | — | —";
    L.push(
      `| ${r.round ?? 1} | ${r.server} | ${r.name} | ${r.engine} | ${fmt(r.clients)} (${r.procs}) | ${r.rate} | ${fmt(r.received)} / ${fmt(r.expected)} | **${ms(r.meanMs)}** | ${ms(r.hmeanMs)} | ${ms(r.p50Ms)} | ${ms(r.p99Ms)} | ${ms(r.maxMs)} | ${cpuCells} | ${r.load.toFixed(1)} |`,
    );
  }
  L.push("");
  L.push(
    "CPU per delivery is shown for rows of 10,000 deliveries/s or more; below that the processes' fixed work (timers, the one-second reports) outweighs the deliveries.",
  );
  L.push("");
  const med = (xs: number[]): number => {
    const a = [...xs].sort((x, y) => x - y);
    return a.length ? (a.length % 2 ? a[(a.length - 1) / 2]! : (a[a.length / 2 - 1]! + a[a.length / 2]!) / 2) : NaN;
  };
  const rounds = [...new Set(rows.map((r) => r.round ?? 1))];
  // The targets are the gateway's: every lookup starts from one server's rows, so the floor's (named "floor: …",
  // and also ending in "× 1/s") never stand in for the gateway's.
  const of = (server: ServerName, round?: number): Row[] => rows.filter((r) => r.server === server && (round === undefined || (r.round ?? 1) === round));
  const hot = (engine: string): Row[] => of("gateway").filter((r) => r.engine === engine && r.rate > 1 && r.clients > 1);
  const ratios = (engine: string): number[] => hot(engine).map((r) => r.toolUsPerDelivery / r.gatewayUsPerDelivery);
  const gapsOf = (engine: string, server: ServerName = "gateway"): number[] =>
    rounds.flatMap((k) => {
      const prefix = server === "gateway" ? "" : FLOOR;
      const single = of(server, k).find((r) => r.name === `${prefix}single client`);
      const many = of(server, k).find((r) => r.name.endsWith("× 1/s") && r.engine === engine);
      return single && many ? [many.meanMs - single.meanMs] : [];
    });
  const list = (xs: number[], d: number): string => xs.map((x) => x.toFixed(d)).join(", ");
  const engines = (["native", "lean", "ws"] as const).filter((e) => of("gateway").some((r) => r.engine === e));
  const judged = engines[0];
  const single = of("gateway").find((r) => r.name === "single client");
  L.push(
    `Targets (${rounds.length} round${rounds.length === 1 ? "" : "s"}, each a fresh set of rows against the same gateway; medians), judged on the ${judged} engine, the others beside it:`,
  );
  L.push("");
  if (judged && ratios(judged).length) {
    const rest = engines
      .slice(1)
      .filter((e) => ratios(e).length)
      .map((e) => `${e}: ${list(ratios(e), 2)}, median ${med(ratios(e)).toFixed(2)}×`);
    const m = med(ratios(judged));
    L.push(
      `- tool CPU per delivery ≤ the gateway's, at ${fmt(hot(judged)[0]!.clients)} × ${hot(judged)[0]!.rate} msg/s: ${judged} engine ${list(ratios(judged), 2)} × the gateway's per round, median **${m.toFixed(2)}×** — **${m <= 1 ? "met" : "not met"}**` +
        (rest.length ? ` (${rest.join("; ")})` : ""),
    );
  }
  if (judged && single && gapsOf(judged).length) {
    const rest = engines
      .slice(1)
      .filter((e) => gapsOf(e).length)
      .map((e) => `${e}: ${list(gapsOf(e), 2)} ms, median ${med(gapsOf(e)).toFixed(2)} ms`);
    const m = med(gapsOf(judged));
    L.push(
      `- 800 × 1 msg/s with MEAN within 2 ms of a single client's (single client on the ${single.engine} engine): the ${judged} engine's MEAN exceeded it by ${list(gapsOf(judged), 2)} ms per round, median **${m.toFixed(2)} ms** — **${m <= 2 ? "met" : "not met"}**` +
        (rest.length ? ` (${rest.join("; ")})` : ""),
    );
  }
  // The floor's own excess, by the engine its rows ran on, beside the gateway's on that engine: the part of the
  // spread that one send() per socket costs before any gateway work.
  const floorMany = of("bare uWS").find((r) => r.clients > 1);
  const floorGaps = floorMany ? gapsOf(floorMany.engine, "bare uWS") : [];
  if (floorMany && floorGaps.length) {
    const f = med(floorGaps);
    const floorSingle = of("bare uWS")
      .filter((r) => r.name === `${FLOOR}single client`)
      .map((r) => r.meanMs);
    const gw = gapsOf(floorMany.engine);
    const g = med(gw);
    const beside = gw.length
      ? ` The gateway's excess on the same engine in the same rounds: ${list(gw, 2)} ms, median ${g.toFixed(2)} ms, ${Math.abs(g - f).toFixed(2)} ms ${g >= f ? "above" : "below"} the floor's.`
      : "";
    L.push(
      `- for scale, the floor: bare uWebSockets.js (${procWord(meta.floorProcs)}, no broker) measured by the ${floorMany.engine} engine in the same rounds; its MEAN at ${fmt(floorMany.clients)} × 1/s ` +
        `exceeded its own single client's (median ${med(floorSingle).toFixed(2)} ms) by ${list(floorGaps, 2)} ms per round, median **${f.toFixed(2)} ms**. ` +
        `That server does nothing but one send() per socket for each message: a gateway with as many processes sending to as many sockets cannot spread its deliveries less, ` +
        `so where the floor's excess is above 2 ms the target is out of reach of any tool on this machine.${beside}`,
    );
  }
  L.push("");
  return L.join("\n");
}

const BENCH = defineBench("tools", {
  seconds: std("seconds", { default: 20, quick: 5, help: "seconds per row (the 1 msg/s rows take at least 10)" }),
  clients: std("clients", { default: 800 }),
  rate: std("rate", { default: 100, help: "messages per second of the CPU rows" }),
  engines: { type: "list", default: ["native", "lean", "ws"], choices: ["native", "lean", "ws"], help: "the client engines measured" },
  "native-procs": { type: "number", integer: true, min: 1, default: 1, help: "processes of the native engine" },
  "lean-procs": { type: "number", integer: true, min: 1, default: 2, help: "processes of the lean engine" },
  "ws-procs": { type: "number", integer: true, min: 1, default: 8, help: "processes of the ws engine" },
  rounds: std("rounds", { default: 3, quick: 1 }),
  // Spelled out rather than parseArgs' allowNegative, which Node 20 has only from 20.16 (package.json allows any 20).
  "no-floor": { type: "boolean", help: "skip the bare uWebSockets.js floor rows" },
  // As many as the gateway's workers: the floor then fans out as the gateway does.
  "floor-procs": { type: "number", integer: true, min: 1, default: GATEWAY_WORKERS, help: "processes of the bare uWS floor" },
  out: std("out", { help: "the report's file (default loadtest/results/tools.md, and .json beside it)" }),
  "no-write": std("no-write"),
  render: std("render"),
  quick: std("quick"),
});

runBench(BENCH, async ({ flags: v }) => {
  const out = reportPath(v, "tools.md");
  if (v.render) {
    const saved = JSON.parse(readFileSync(v.render, "utf8")) as {
      started: string;
      seconds?: number;
      cores?: number;
      cpu?: string;
      quick?: boolean;
      floorProcs?: number;
      rows: (Omit<Row, "server"> & Partial<Pick<Row, "server">>)[];
    };
    // Runs saved before the floor rows name no server: every row of theirs ran against the gateway.
    const rows = saved.rows.map((r): Row => ({ ...r, server: r.server ?? "gateway" }));
    const md = markdown(rows, {
      started: new Date(saved.started),
      seconds: saved.seconds ?? rows[0]!.seconds,
      cores: saved.cores ?? cpus().length,
      cpu: saved.cpu ?? cpus()[0]?.model ?? "?",
      quick: saved.quick ?? false,
      floorProcs: saved.floorProcs ?? 1,
    });
    if (out) writeReport(out, md);
    else console.log(md);
    return;
  }
  const { seconds, rounds, clients, rate } = v;
  const leanProcs = v["lean-procs"];
  const wsProcs = v["ws-procs"];
  const nativeProcs = v["native-procs"];
  const floorProcs = v["floor-procs"];
  const engineList = v.engines as Engine[];
  const procsOf = (e: Engine): number => (e === "native" ? nativeProcs : e === "lean" ? leanProcs : wsProcs);
  const singleEngine: Engine = engineList.includes("native") ? "native" : "lean";
  const work = mkdtempSync(join(tmpdir(), "fgw-bench-tools-"));
  const started = new Date();
  const nats = await startNats();
  const gw = await startGatewayProc(nats.url, GATEWAY_WORKERS);
  const rows: Row[] = [];
  const gateway: Target = { server: "gateway", port: gw.port, pid: gw.proc.pid! };
  let floorProc: Proc | undefined;
  try {
    log(`gateway on port ${gw.port}; ${seconds} s per row`);
    // One floor server for the run, like the gateway: it idles (no clients) while the gateway's rows run.
    let floor: Target | undefined;
    if (!v["no-floor"]) {
      const f = await startFloor(floorProcs);
      floorProc = f.proc;
      floor = { server: "bare uWS", port: f.port, pid: f.proc.child.pid! };
      log(`bare uWS floor on port ${f.port}`);
    }
    const slowS = Math.max(seconds, 10);
    for (let k = 1; k <= rounds; k++) {
      const add = async (p: Promise<Row>): Promise<void> => {
        rows.push({ ...(await p), round: k });
      };
      // Engines alternate which goes first, so neither always meets the machine in the same state.
      const engines = k % 2 ? engineList : [...engineList].reverse();
      for (const e of engines) await add(row(`${fmt(clients)} × ${rate}/s`, e, clients, procsOf(e), rate, seconds, gateway, work));
      await add(row("single client", singleEngine, 1, 1, 1, slowS, gateway, work));
      for (const e of engines) await add(row(`${fmt(clients)} × 1/s`, e, clients, procsOf(e), 1, slowS, gateway, work));
      // The floor's pair, on the engine the gateway's single client used, with that engine's 800 × 1/s clients and processes.
      if (floor) {
        await add(row(`${FLOOR}single client`, singleEngine, 1, 1, 1, slowS, floor, work));
        await add(row(`${FLOOR}${fmt(clients)} × 1/s`, singleEngine, clients, procsOf(singleEngine), 1, slowS, floor, work));
      }
    }
  } finally {
    gw.proc.kill("SIGTERM");
    nats.proc.kill("SIGTERM");
    await floorProc?.stop(5_000);
    rmSync(work, { recursive: true, force: true });
  }
  const md = markdown(rows, { started, seconds, cores: cpus().length, cpu: cpus()[0]?.model ?? "?", quick: v.quick, floorProcs });
  console.log(md);
  if (out) {
    writeReport(out, md);
    writeReport(
      sibling(out, ".json"),
      JSON.stringify({ started, seconds, cores: cpus().length, cpu: cpus()[0]?.model ?? "?", quick: v.quick, floorProcs, rows }, null, 2) + "\n",
    );
  }
});
