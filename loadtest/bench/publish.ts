// bench:publish — acknowledged publishes per second through each publish path, against nats.js publishing
// straight into the stream in the same run (one nats-server, one gateway with 2 workers, 128-byte JSON):
//   nats.js js.publish 256 in flight · natscli `nats bench js pub async` (the Go reference, when built) ·
//   HTTP POST /v1/publish/{ch} with 64 connections, 64 × pipelining 10, 1 connection one at a time ·
//   HTTP batches of 10 and 100 (POST /v1/publish) · WebSocket pub 16 sockets × 64 in flight ·
//   WebSocket batches of 10 and 100.
// Per leg: msgs/s, ratio to nats.js, gateway, nats-server and load-generator CPU per message (µs, /proc and
// process.cpuUsage), p50/p99 latency of one publish (a batch's round trip for its items). Every leg runs once
// unmeasured first (1 s), so that each is measured with its code compiled, as a server that has been up is.
// The HTTP legs are driven by wrk (C) when it is installed (`apt-get install wrk`), else by autocannon: on this
// 2-core machine the load generator shares the CPU with the gateway, and autocannon (Node) takes about a
// third more per request than the gateway itself; the client column shows what each generator cost. A nats.js
// leg of 64 connections with one publish each in flight is the direct equivalent of 64 HTTP publishers.
// Results are appended to loadtest/results/publish.md.
// Usage: npm run bench -- publish [--seconds 5 --legs a,b --http-client wrk|autocannon --quick]
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { execFileSync } from "node:child_process";
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import WebSocket from "ws";
import { fmt, percentile, ROOT, startGatewayProc, startNats } from "./common.js";
import { cpuWindow } from "./jetstream/cpu.js";
import { NATS_CLI, parseBench, runNats } from "./jetstream/natscli.js";
import { hasWrk, wrk, type HttpClient } from "./wrk.js";
import { FlagError, std } from "../kit/flags.js";
import { defineBench, runBench } from "../kit/main.js";
import { appendSection, reportPath } from "../kit/results.js";

const BODY = JSON.stringify({ x: "y".repeat(120) }); // 128 bytes
const CHANNEL = "bench.pub";

/** `clientCpuS`: CPU seconds the load generator used when it ran outside this process (wrk, natscli). */
type LegResult =
  { msgs: number; seconds: number; latMs: number[] } | { msgsPerSec: number; p50Ms: number; p99Ms: number; seconds: number; clientCpuS?: number };
/** `warm`: false for a leg whose code runs in a process started for it (natscli), which a warm-up cannot help. */
type Leg = { name: string; what: string; run: (seconds: number) => Promise<LegResult>; warm?: boolean };
type Row = {
  leg: string;
  what: string;
  msgsPerSec: number;
  ratio: number;
  gwUsPerMsg: number | null;
  natsUsPerMsg: number;
  clientUsPerMsg: number | null;
  p50Ms: number;
  p99Ms: number;
};

/** Runs `step` with at most `inFlight` outstanding until `seconds` pass; each step resolves with how many messages it carried. */
async function closedLoop(seconds: number, inFlight: number, step: () => Promise<number>): Promise<LegResult> {
  const end = performance.now() + seconds * 1000;
  const latMs: number[] = [];
  let msgs = 0;
  const worker = async () => {
    while (performance.now() < end) {
      const t = performance.now();
      const n = await step();
      const ms = performance.now() - t;
      msgs += n;
      for (let i = 0; i < n; i++) latMs.push(ms);
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: inFlight }, worker));
  return { msgs, seconds: (performance.now() - t0) / 1000, latMs };
}

function natsJsLeg(natsUrl: string, name: string, what: string, o: { connections: number; inFlight: number }): Leg {
  return {
    name,
    what,
    run: async (seconds) => {
      // As the gateway connects (no async stack traces): the strongest nats.js baseline, not its default.
      const ncs = await Promise.all(Array.from({ length: o.connections }, () => connect({ servers: natsUrl, noAsyncTraces: true })));
      const jss = ncs.map((nc) => jetstream(nc));
      const payload = new TextEncoder().encode(BODY);
      let i = 0;
      try {
        return await closedLoop(seconds, o.connections * o.inFlight, async () => {
          await jss[i++ % jss.length]!.publish(`ev.${CHANNEL}`, payload);
          return 1;
        });
      } finally {
        await Promise.all(ncs.map((nc) => nc.close()));
      }
    },
  };
}

function natscliLeg(natsUrl: string): Leg | undefined {
  if (!existsSync(NATS_CLI)) return undefined;
  return {
    name: "natscli",
    what: "`nats bench js pub async` (Go), batch 256, into the gateway's stream",
    warm: false,
    run: async (seconds) => {
      // A fixed count that takes about `seconds` at the nats.js rate measured here before (~30k/s).
      const msgs = Math.max(10_000, Math.round(seconds * 30_000));
      const r = await runNats(
        [
          "bench",
          "js",
          "pub",
          "async",
          `ev.${CHANNEL}.cli`,
          "--msgs",
          String(msgs),
          "--size",
          "128",
          "--batch",
          "256",
          "--no-progress",
          "--stream",
          "FANOUT_CHANNELS",
        ],
        natsUrl,
        120_000,
      );
      const b = parseBench(r.stdout);
      return { msgsPerSec: b.aggregate, p50Ms: (b.latencyUs?.p50 ?? NaN) / 1000, p99Ms: (b.latencyUs?.p99 ?? NaN) / 1000, seconds: r.ms / 1000 };
    },
  };
}

const require = createRequire(resolve(ROOT, "loadtest/package.json"));

/** HTTP publishers: msgs/s is 2xx answers/s × messages per request. */
function httpLeg(port: number, name: string, what: string, o: { connections: number; pipelining?: number; batch?: number; client: HttpClient }): Leg {
  const single = o.batch === undefined;
  const url = single ? `http://127.0.0.1:${port}/v1/publish/${CHANNEL}` : `http://127.0.0.1:${port}/v1/publish`;
  const body = single ? BODY : `[${Array.from({ length: o.batch! }, () => `{"channel":"${CHANNEL}","data":${BODY}}`).join(",")}]`;
  const client = o.pipelining ? "autocannon" : o.client; // wrk pipelines only through a script of its own
  return {
    name,
    what: `${what} (${client})`,
    run: (seconds) => (client === "wrk" ? wrk(url, body, o.connections, seconds, o.batch ?? 1, name) : autocannonRun(url, body, o, seconds, name)),
  };
}

/** autocannon from loadtest/node_modules, in this process (its CPU is this process's). */
async function autocannonRun(
  url: string,
  body: string,
  o: { connections: number; pipelining?: number; batch?: number },
  seconds: number,
  name: string,
): Promise<LegResult> {
  const autocannon = require("autocannon") as (o: Record<string, unknown>, cb: (e: unknown, r: AutocannonResult) => void) => void;
  const r = await new Promise<AutocannonResult>((res, rej) =>
    autocannon(
      {
        url,
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        connections: o.connections,
        pipelining: o.pipelining ?? 1,
        duration: seconds,
        timeout: 10,
      },
      (e, x) => (e ? rej(e instanceof Error ? e : new Error(String(e))) : res(x)),
    ),
  );
  if (r.non2xx > 0 || r.errors > 0) console.log(`  (${name}: ${r.non2xx} non-2xx answers, ${r.errors} errors)`);
  return { msgsPerSec: (r["2xx"] * (o.batch ?? 1)) / r.duration, p50Ms: r.latency.p50, p99Ms: r.latency.p99, seconds: r.duration };
}

type AutocannonResult = { duration: number; "2xx": number; non2xx: number; errors: number; latency: { p50: number; p99: number } };

/** WebSocket publishers: `sockets` connections, `inFlight` frames outstanding on each, `batch` items per frame (0: single pub). */
function wsLeg(port: number, name: string, what: string, o: { sockets: number; inFlight: number; batch: number }): Leg {
  return {
    name,
    what,
    run: async (seconds) => {
      const sockets = await Promise.all(
        Array.from(
          { length: o.sockets },
          () =>
            new Promise<WebSocket>((res, rej) => {
              const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, { perMessageDeflate: false });
              ws.once("open", () => res(ws));
              ws.once("error", rej);
            }),
        ),
      );
      let next = 0;
      const waiting = new Map<number, () => void>();
      for (const ws of sockets)
        ws.on("message", (d: Buffer) => {
          const m = /"id":(\d+)/.exec(d.toString("latin1", 0, 40));
          if (m) waiting.get(Number(m[1]))?.();
        });
      const item = `{"channel":"${CHANNEL}","data":${BODY}}`;
      const frame = (id: number) =>
        o.batch ? `{"op":"pub","id":${id},"batch":[${Array(o.batch).fill(item).join(",")}]}` : `{"op":"pub","id":${id},"channel":"${CHANNEL}","data":${BODY}}`;
      try {
        return await closedLoop(seconds, o.sockets * o.inFlight, () => {
          const id = ++next;
          const ws = sockets[id % sockets.length]!;
          return new Promise<number>((res, rej) => {
            const t = setTimeout(() => rej(new Error(`${name}: no ok for frame ${id} in 10 s`)), 10_000);
            waiting.set(id, () => {
              clearTimeout(t);
              waiting.delete(id);
              res(o.batch || 1);
            });
            ws.send(frame(id));
          });
        });
      } finally {
        for (const ws of sockets) ws.close();
      }
    },
  };
}

function ensureLoadtestDeps(): void {
  const dir = resolve(ROOT, "loadtest");
  if (existsSync(resolve(dir, "node_modules/autocannon"))) return;
  console.log("installing loadtest/'s own dependencies (autocannon) with npm ci");
  execFileSync("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: dir, stdio: "inherit" });
}

const BENCH = defineBench("publish", {
  seconds: std("seconds", { default: 5, quick: 1 }),
  legs: { type: "list", help: "only these legs (nats.js always runs: it is the baseline), e.g. http-64,ws-16x64" },
  "http-client": { type: "string", choices: ["wrk", "autocannon"], help: "the HTTP load generator (default: wrk when installed, else autocannon)" },
  out: std("out", { help: "the results file a run's section is appended to (default loadtest/results/publish.md)" }),
  "no-write": std("no-write"),
  quick: std("quick"),
});

runBench(BENCH, async ({ flags: v }) => {
  const { seconds } = v;
  const client = (v["http-client"] ?? (hasWrk() ? "wrk" : "autocannon")) as HttpClient;
  if (client === "wrk" && !hasWrk()) throw new FlagError("--http-client wrk: wrk is not installed (apt-get install wrk)");
  ensureLoadtestDeps();
  const nats = await startNats();
  const gw = await startGatewayProc(nats.url, 2);
  const all: Leg[] = [
    natsJsLeg(nats.url, "nats.js", "nats.js `js.publish`, 256 in flight, straight to the stream", { connections: 1, inFlight: 256 }),
    natsJsLeg(nats.url, "nats.js-64x1", "nats.js, 64 connections with one `js.publish` each in flight (64 direct publishers)", {
      connections: 64,
      inFlight: 1,
    }),
    ...[natscliLeg(nats.url)].filter((l): l is Leg => l !== undefined),
    httpLeg(gw.port, "http-64", "`POST /v1/publish/{ch}`, 64 connections", { connections: 64, client }),
    ...(client === "wrk" ? [httpLeg(gw.port, "http-64-ac", "same, 64 connections", { connections: 64, client: "autocannon" })] : []),
    httpLeg(gw.port, "http-64-p10", "same, 64 connections, pipelining 10", { connections: 64, pipelining: 10, client }),
    httpLeg(gw.port, "http-1", "same, 1 connection, one request at a time", { connections: 1, client }),
    httpLeg(gw.port, "http-batch-10", "`POST /v1/publish` batches of 10, 16 connections", { connections: 16, batch: 10, client }),
    httpLeg(gw.port, "http-batch-100", "`POST /v1/publish` batches of 100, 4 connections", { connections: 4, batch: 100, client }),
    wsLeg(gw.port, "ws-16x64", "WebSocket `pub`, 16 sockets × 64 in flight", { sockets: 16, inFlight: 64, batch: 0 }),
    wsLeg(gw.port, "ws-batch-10", "WebSocket `pub` batches of 10, 4 sockets × 8 in flight", { sockets: 4, inFlight: 8, batch: 10 }),
    wsLeg(gw.port, "ws-batch-100", "WebSocket `pub` batches of 100, 4 sockets × 2 in flight", { sockets: 4, inFlight: 2, batch: 100 }),
  ];
  const wanted = v.legs;
  const legs = all.filter((l) => l.name === "nats.js" || !wanted || wanted.includes(l.name));
  const rows: Row[] = [];
  let base = NaN;
  try {
    for (const leg of legs) {
      if (leg.warm !== false) await leg.run(1);
      const gwCpu = cpuWindow([gw.proc.pid!]);
      const natsCpu = cpuWindow([nats.proc.pid!]);
      const own0 = process.cpuUsage();
      const r = await leg.run(seconds);
      const [g, n] = [gwCpu.read(), natsCpu.read()];
      const own = process.cpuUsage(own0);
      const msgsPerSec = "msgs" in r ? r.msgs / r.seconds : r.msgsPerSec;
      const sorted = "latMs" in r ? [...r.latMs].sort((a, b) => a - b) : [];
      if (leg.name === "nats.js") base = msgsPerSec;
      const usPer = (pct: number) => (pct / 100 / msgsPerSec) * 1e6;
      const direct = leg.name.startsWith("nats.js") || leg.name === "natscli";
      // The load generator: wrk's CPU when it ran, natscli's is not measured, else this process's own.
      const clientS = "clientCpuS" in r ? r.clientCpuS : leg.name === "natscli" ? undefined : (own.user + own.system) / 1e6;
      rows.push({
        leg: leg.name,
        what: leg.what,
        msgsPerSec,
        ratio: msgsPerSec / base,
        gwUsPerMsg: direct ? null : usPer(g),
        natsUsPerMsg: usPer(n),
        clientUsPerMsg: clientS === undefined ? null : (clientS / r.seconds / msgsPerSec) * 1e6,
        p50Ms: "p50Ms" in r ? r.p50Ms : percentile(sorted, 50),
        p99Ms: "p99Ms" in r ? r.p99Ms : percentile(sorted, 99),
      });
      const row = rows.at(-1)!;
      const us = (x: number | null) => (x === null ? "—" : fmt(x, 1));
      console.log(
        `${leg.name.padEnd(15)} ${fmt(row.msgsPerSec).padStart(8)} msgs/s  ${row.ratio.toFixed(2)}×  gw ${us(row.gwUsPerMsg)} µs  nats ${fmt(row.natsUsPerMsg, 1)} µs  client ${us(row.clientUsPerMsg)} µs  p50 ${fmt(row.p50Ms, 2)} ms  p99 ${fmt(row.p99Ms, 2)} ms`,
      );
    }
  } finally {
    gw.proc.kill("SIGTERM");
    await nats.stop();
  }
  const table = [
    "| path | acknowledged msgs/s | vs nats.js | gateway CPU per msg | nats-server CPU per msg | load generator CPU per msg | p50 | p99 |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
    ...rows.map(
      (r) =>
        `| ${r.what} | ${fmt(r.msgsPerSec)} | ${r.ratio.toFixed(2)} | ${r.gwUsPerMsg === null ? "—" : `${fmt(r.gwUsPerMsg)} µs`} | ${fmt(r.natsUsPerMsg, 1)} µs | ${r.clientUsPerMsg === null ? "—" : `${fmt(r.clientUsPerMsg)} µs`} | ${fmt(r.p50Ms, 2)} ms | ${fmt(r.p99Ms, 2)} ms |`,
    ),
  ].join("\n");
  console.log(`\n${table}`);
  const file = reportPath(v, "publish.md");
  if (file)
    appendSection(
      file,
      "# bench:publish — the publish paths against nats.js in one run\n\nWritten by `npm run bench -- publish`; one section per run, newest last.",
      `## ${new Date().toISOString()} — ${seconds} s per leg after 1 s unmeasured, one nats-server, 2 gateway workers, 128-byte JSON, HTTP legs by ${client}\n\n${table}`,
    );
});
