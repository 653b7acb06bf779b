// bench:fanout — N WebSocket clients, M msgs/s, through the gateway (JetStream) and through a bare uWS
// publish server in the same run; prints deliveries/s and latency percentiles for both and their ratio.
// Not a test: numbers go to the README. Usage: npm run bench -- fanout [--clients 200] [--rate 500]
//   [--seconds 8] [--procs 2] [--size 64] [--workers 1] [--compression off|shared|both] [--publish-load N]
// --publish-load N: one more gateway row, while N msgs/s are published through the same gateway (HTTP batches of
// 100 to a channel nobody subscribes to) and a single HTTP publish every 50 ms is timed: delivery under publish
// load against bare uWS, and a single publish's latency under that load.
// --compression shared: the gateway runs with COMPRESSION=shared (bare uWS with SHARED_COMPRESSOR, publish
// compress=true) and the clients negotiate permessage-deflate; both: a row pair, off then shared. Each row
// also shows the server's CPU (its process tree, from /proc) per delivery.
// --coalesce MS: one more gateway row with COALESCE=MS and clients that connect with coalesce=1 (PROTOCOL.md
// "Coalesced frames"), and the issue-36 keys in the JSON line: cpuRatioCoalesced, cpuRatioPlain (server CPU per
// delivered message against bare uWS sending one frame per message) and latencyP99CoalescedMs.
// --spacing burst (default) publishes rate/100 messages together every 10 ms, and uWS writes a burst to each
// socket in one syscall; even publishes one message at a time, so a server sending one frame per message
// writes each socket once per message: the cost coalescing removes (bench wire's coalesce run uses even).
// Clients use the load tools' lean WebSocket engine (ws clients with permessage-deflate).
// The issue's size: `npm run bench -- fanout --clients 2000 --procs 4 --rate 500 --coalesce 25 --spacing even --json`
// (2,000 sockets on one channel, 500 msg/s, a 25 ms window; more than a 2-core box can deliver).
import { fork, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import WebSocket from "ws";
import { fmt, nowUs, percentile, startGatewayProc, startNats, until } from "./common.js";
import { cpuWindow, machineWindow } from "./jetstream/cpu.js";
import { LeanSocket } from "../../subtools/src/lean/connection.js";
import { Opcode } from "../../subtools/src/lean/frame-reader.js";
import { std } from "../kit/flags.js";
import { pace, SPACINGS, type Spacing } from "./pace.js";
import { defineBench, KEEP_RUNNING, runBench } from "../kit/main.js";

type Report = { received: number; latUs: number[] };

// --- client process: K sockets, count deliveries and sample latency (µs) ---
/** The bench's tally of one client process: messages received, frames received, latency samples. */
class Tally {
  received = 0;
  frames = 0;
  lat: number[] = [];

  /**
   * One text frame (`buf[start, end)`): a `msg` frame or a coalesced frame of them, one a line (the bench's
   * payloads have no line feed of their own); other frames (the sub's `ok`) are not counted. The send time sits
   * in each payload as "t":<µs>: a scan instead of JSON.parse keeps the client light. Every 8th frame is sampled,
   * each of its messages.
   */
  frame(buf: Buffer, start: number, end: number, recvUs: number): void {
    if (buf[start + 7] !== 0x6d /* {"op":"m */) return;
    this.received++;
    for (let at = buf.indexOf(10, start); at >= 0 && at < end; at = buf.indexOf(10, at + 1)) this.received++;
    if ((++this.frames & 7) !== 0) return;
    for (let i = buf.indexOf(T_KEY, start); i >= 0 && i < end; i = buf.indexOf(T_KEY, i + 4)) {
      let t = 0;
      for (let j = i + 4; j < end; j++) {
        const c = buf[j]! - 48;
        if (c < 0 || c > 9) break;
        t = t * 10 + c;
      }
      this.lat.push(recvUs - t);
    }
  }
}
const T_KEY = Buffer.from('"t":');

/**
 * K sockets on one channel. Without deflate they are the load tools' lean engine (subtools/src/lean: a
 * WebSocket on a plain TCP socket, no allocation per read), so the clients cost less than the servers they
 * measure: at 2,000 sockets × 500 msg/s, one frame per message, `ws` clients took the box's cores. With
 * permessage-deflate (which the lean engine does not speak) they are `ws` clients.
 */
async function clientMain(url: string, channel: string, k: number, deflate: boolean): Promise<void> {
  const tally = new Tally();
  const sub = JSON.stringify({ op: "sub", id: 1, channel });
  const closers: (() => void)[] = [];
  for (let i = 0; i < k; i++) closers.push(deflate ? await wsClient(url, sub, tally) : await leanClient(url, sub, tally));
  process.send!({ type: "ready" });
  process.on("message", (m: { type: string }) => {
    if (m.type === "report") {
      process.send!({ type: "report", received: tally.received, latUs: tally.lat });
      tally.received = 0;
      tally.lat = [];
    } else if (m.type === "exit") {
      for (const close of closers) close();
      process.exit(0);
    }
  });
}

async function leanClient(url: string, sub: string, tally: Tally): Promise<() => void> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const sock: LeanSocket = new LeanSocket(
      { host: u.hostname, port: Number(u.port), path: u.pathname + u.search, timeoutMs: 10_000 },
      {
        open: () => {
          sock.send(sub);
          resolve(() => sock.destroy());
        },
        message: (op, buf, start, end, recvUs) => {
          if (op === Opcode.Text) tally.frame(buf, start, end, recvUs);
        },
        closed: (info) => reject(info.error ?? new Error(`bench client closed (${info.reason})`)),
      },
    );
  });
}

async function wsClient(url: string, sub: string, tally: Tally): Promise<() => void> {
  const ws = new WebSocket(url, { perMessageDeflate: true, skipUTF8Validation: true });
  await new Promise<void>((res, rej) => {
    ws.once("open", () => res());
    ws.once("error", rej);
  });
  if (!ws.extensions.includes("permessage-deflate")) throw new Error("the server did not negotiate permessage-deflate");
  ws.on("message", (d: Buffer) => tally.frame(d, 0, d.length, nowUs()));
  ws.send(sub);
  return () => ws.terminate();
}

// --- bare uWS server: the same frames published to a topic by a timer in-process ---
async function bareMain(rate: number, size: number, spacing: Spacing, seconds: number, compress: boolean): Promise<void> {
  const require = createRequire(import.meta.url);
  const uws = require("uWebSockets.js") as typeof import("uWebSockets.js");
  const app = uws.App();
  app.ws("/ws", {
    compression: compress ? uws.SHARED_COMPRESSOR : uws.DISABLED,
    maxBackpressure: 8 << 20,
    message: (ws) => {
      ws.subscribe("bench");
      ws.send('{"op":"ok","id":1}');
    },
  });
  await new Promise<void>((res) =>
    app.listen("127.0.0.1", 0, (t) => {
      process.send!({ type: "port", port: uws.us_socket_local_port(t as never) });
      res();
    }),
  );
  const pad = "x".repeat(size);
  let seq = 0;
  process.on("message", (m: { type: string }) => {
    if (m.type !== "go") return;
    pace(rate, spacing, (seconds + PUBLISH_SLACK_S) * 1000, () => {
      seq++;
      app.publish(
        "bench",
        `{"op":"msg","channel":"bench","sub":"bench","seq":${seq},"ts":${Date.now()},"data":{"t":${nowUs()},"s":${seq},"x":"${pad}"}}`,
        false,
        compress,
      );
    });
  });
}

async function runClients(url: string, channel: string, clients: number, procs: number, deflate: boolean): Promise<ChildProcess[]> {
  const per = Math.ceil(clients / procs);
  const args = ["--role", "client", "--url", url, "--channel", channel, "--k", String(per), ...(deflate ? ["--deflate"] : [])];
  const children = Array.from({ length: procs }, () => fork(process.argv[1]!, args, { stdio: "inherit" }));
  await Promise.all(children.map((c) => new Promise<void>((res) => c.once("message", () => res()))));
  return children;
}

/** The load of a row: sockets (in `procs` client processes) on one channel, msgs/s of `size` bytes, paced by `spacing`. */
type Shape = { clients: number; rate: number; seconds: number; procs: number; size: number; spacing: Spacing };

/** `cpuPct`: the server's process tree, in % of one core; `machinePct`: every core's busy time, in % of the machine. */
type Result = { deliveriesPerSec: number; lat: number[]; cpuPct: number; machinePct: number; load?: LoadResult };

type LoadResult = { offered: number; stored: number; failed: number; singleLatMs: number[] };

/** Publishes `perSec` msgs/s through the gateway in HTTP batches of 100, and times a single publish every 50 ms. */
function publishLoad(port: number, perSec: number): { stop: () => Promise<LoadResult> } {
  const url = `http://127.0.0.1:${port}/v1/publish`;
  const batch = JSON.stringify(Array.from({ length: 100 }, (_, i) => ({ channel: "bench.load", data: { i, x: "y".repeat(64) } })));
  const r: LoadResult = { offered: 0, stored: 0, failed: 0, singleLatMs: [] };
  const inflight = new Set<Promise<void>>();
  const track = (p: Promise<void>) => {
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
  };
  let owed = 0;
  const tickMs = 10;
  const batches = setInterval(() => {
    owed += (perSec / 100) * (tickMs / 1000);
    for (; owed >= 1; owed--) {
      r.offered += 100;
      track(
        fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: batch }).then(
          async (res) => {
            const items = (await res.json()) as { results?: { seq?: number }[] };
            const ok = items.results?.filter((x) => typeof x.seq === "number").length ?? 0;
            r.stored += ok;
            r.failed += 100 - ok;
          },
          () => void (r.failed += 100),
        ),
      );
    }
  }, tickMs);
  const singles = setInterval(() => {
    const t = performance.now();
    track(
      fetch(`${url}/bench.single`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"single":true}' }).then(
        async (res) => {
          await res.arrayBuffer();
          if (res.status === 201) r.singleLatMs.push(performance.now() - t);
        },
        () => undefined,
      ),
    );
  }, 50);
  return {
    stop: async () => {
      clearInterval(batches);
      clearInterval(singles);
      await Promise.allSettled([...inflight]);
      r.singleLatMs.sort((a, b) => a - b);
      return r;
    },
  };
}

/** Deliveries and latency over `seconds` after a warm-up second, and the CPU of `serverPid`'s process tree meanwhile. */
async function collect(children: ChildProcess[], seconds: number, serverPid: number): Promise<Result> {
  const ask = () =>
    Promise.all(
      children.map(
        (c) =>
          new Promise<Report>((res) => {
            c.once("message", (m: Report) => res(m));
            c.send({ type: "report" });
          }),
      ),
    );
  await new Promise((r) => setTimeout(r, 1_000)); // warm-up second, discarded
  await ask();
  const cpu = cpuWindow([serverPid]);
  const machine = machineWindow();
  const t0 = Date.now();
  await new Promise((r) => setTimeout(r, seconds * 1_000));
  const reps = await ask();
  const cpuPct = cpu.read();
  const machinePct = machine.read();
  const dt = (Date.now() - t0) / 1000;
  const lat = reps.flatMap((r) => r.latUs).sort((a, b) => a - b);
  return { deliveriesPerSec: reps.reduce((a, r) => a + r.received, 0) / dt, lat, cpuPct, machinePct };
}

const BENCH = defineBench("fanout", {
  clients: std("clients", { default: 200, quick: 50 }),
  rate: std("rate", { default: 500, quick: 100 }),
  seconds: std("seconds", { default: 8, quick: 2 }),
  procs: std("procs", { default: 2 }),
  size: std("size", { default: 64 }),
  workers: std("workers", { default: 1 }),
  compression: {
    type: "string",
    default: "off",
    choices: ["off", "shared", "both"],
    help: "permessage-deflate: off, shared (COMPRESSION=shared), or both as row pairs",
  },
  coalesce: { type: "number", min: 0, max: 1_000, default: 0, help: "ms: one more gateway row with COALESCE=ms and clients that read coalesced frames" },
  "publish-load": { type: "number", min: 0, default: 0, help: "one more gateway row while this many msgs/s are published through its HTTP API" },
  spacing: {
    type: "string",
    default: "burst",
    choices: SPACINGS,
    help: "burst: rate/100 messages together every 10 ms (the tables in docs/benchmarks.md); even: each message on its own, 1000/rate ms apart (bench wire's coalesce run)",
  },
  json: std("json"),
  quick: std("quick"),
  role: { type: "string", default: "main", choices: ["main", "client", "bare"], internal: true, help: "the process's part" },
  url: { type: "string", internal: true, help: "client: the server's URL" },
  channel: { type: "string", internal: true, help: "client: the channel" },
  k: { type: "number", internal: true, help: "client: its sockets" },
  deflate: { type: "boolean", internal: true, help: "client: offer permessage-deflate" },
  compress: { type: "boolean", internal: true, help: "bare: compress" },
});

runBench(BENCH, async ({ flags: v }) => {
  if (v.role === "client") return clientMain(v.url!, v.channel!, v.k!, v.deflate).then(() => KEEP_RUNNING);
  if (v.role === "bare") return bareMain(v.rate, v.size, v.spacing as Spacing, v.seconds, v.compress).then(() => KEEP_RUNNING);
  const { clients, rate, seconds, procs, size } = v;
  const shape: Shape = { clients, rate, seconds, procs, size, spacing: v.spacing as Spacing };
  const modes = v.compression === "both" ? [false, true] : [v.compression === "shared"];

  const rows: { name: string; r: Result }[] = [];
  for (const deflate of modes) {
    const tag = deflate ? ", permessage-deflate" : "";
    rows.push({
      name: `gateway (JetStream, ${v.workers} worker${v.workers === 1 ? "" : "s"}${tag})`,
      r: await runGateway(shape, v.workers, deflate),
    });
    rows.push({ name: `bare uWS publish${tag}`, r: await runBare(shape, deflate) });
  }
  const load = v["publish-load"];
  const coalesced =
    v.coalesce > 0
      ? {
          name: `gateway (JetStream, ${v.workers} worker${v.workers === 1 ? "" : "s"}, coalesce ${v.coalesce} ms)`,
          r: await runGateway(shape, v.workers, false, 0, v.coalesce),
        }
      : undefined;
  const loaded =
    load > 0
      ? {
          name: `gateway (JetStream, ${v.workers} worker${v.workers === 1 ? "" : "s"}) while ${fmt(load)} msgs/s are published through it`,
          r: await runGateway(shape, v.workers, false, load),
        }
      : undefined;

  const row = (name: string, r: Result) =>
    `| ${name} | ${fmt(r.deliveriesPerSec)} | ${fmt(percentile(r.lat, 50) / 1000, 2)} | ${fmt(percentile(r.lat, 99) / 1000, 2)} | ${fmt(percentile(r.lat, 99.9) / 1000, 2)} | ${fmt(r.lat.at(-1)! / 1000, 2)} | ${fmt(r.cpuPct)} | ${fmt(cpuUsPerDelivery(r), 2)} | ${fmt(r.machinePct)} |`;
  const expected = clients * rate;
  console.log(
    `\nbench:fanout — ${clients} clients × ${rate} msg/s (${fmt(expected)} deliveries/s offered, ${v.spacing} spacing), ${size} B payload, ${seconds} s, ${procs} client processes`,
  );
  console.log(
    "| server | deliveries/s | p50 ms | p99 ms | p99.9 ms | max ms | server CPU % | CPU µs/delivery | machine busy % |\n|---|---|---|---|---|---|---|---|---|",
  );
  for (const x of rows) console.log(row(x.name, x.r));
  if (coalesced) console.log(row(coalesced.name, coalesced.r));
  if (loaded) console.log(row(loaded.name, loaded.r));
  for (let i = 0; i < rows.length; i += 2)
    console.log(
      `ratio gateway/bare deliveries/s${modes[i / 2] ? " (deflate)" : ""}: ${(rows[i]!.r.deliveriesPerSec / rows[i + 1]!.r.deliveriesPerSec).toFixed(3)} (target >= 0.90)`,
    );
  if (loaded?.r.load) {
    const l = loaded.r.load;
    console.log(
      `ratio gateway under publish load/bare deliveries/s: ${(loaded.r.deliveriesPerSec / rows[1]!.r.deliveriesPerSec).toFixed(3)} (target >= 0.90); published ${fmt(l.stored)} of ${fmt(l.offered)} offered (${fmt(l.failed)} failed); single HTTP publish under that load p50 ${fmt(percentile(l.singleLatMs, 50), 2)} ms, p99 ${fmt(percentile(l.singleLatMs, 99), 2)} ms (${l.singleLatMs.length} timed)`,
    );
  }
  if (rows.length === 4)
    console.log(
      `deflate costs the gateway ${fmt(cpuUsPerDelivery(rows[2]!.r) - cpuUsPerDelivery(rows[0]!.r), 2)} µs CPU per delivery (${(cpuUsPerDelivery(rows[2]!.r) / cpuUsPerDelivery(rows[0]!.r)).toFixed(2)}x)`,
    );
  const bareCpu = cpuUsPerDelivery(rows[1]!.r);
  const issue36 = coalesced
    ? {
        cpuRatioCoalesced: cpuUsPerDelivery(coalesced.r) / bareCpu,
        cpuRatioPlain: cpuUsPerDelivery(rows[0]!.r) / bareCpu,
        latencyP99CoalescedMs: percentile(coalesced.r.lat, 99) / 1000,
      }
    : undefined;
  // A row that delivered less than it was offered measured a backlog, not a rate: its CPU per delivery and
  // latency describe a saturated machine (bigger writes, fewer wake-ups), and a ratio built on it means nothing.
  const behind = [...rows, ...(coalesced ? [coalesced] : [])].filter((x) => x.r.deliveriesPerSec < KEPT_UP * expected).map((x) => x.name);
  if (behind.length > 0)
    console.log(
      `NOT VALID: ${behind.join("; ")} delivered less than ${KEPT_UP * 100} % of the ${fmt(expected)} deliveries/s offered (the machine could not keep up)`,
    );
  if (issue36)
    console.log(
      `coalesce ${v.coalesce} ms: CPU per delivery ${issue36.cpuRatioCoalesced.toFixed(3)}x bare uWS (target <= 0.5), window off ${issue36.cpuRatioPlain.toFixed(3)}x (about 1.1); p99 ${fmt(issue36.latencyP99CoalescedMs, 2)} ms (target <= ${v.coalesce + 15})`,
    );
  if (v.json)
    console.log(
      JSON.stringify({
        clients,
        rate,
        size,
        rows: [...rows, ...(coalesced ? [coalesced] : [])].map((x) => ({
          name: x.name,
          deliveriesPerSec: x.r.deliveriesPerSec,
          cpuPct: x.r.cpuPct,
          cpuUsPerDelivery: cpuUsPerDelivery(x.r),
          machinePct: x.r.machinePct,
        })),
        ...issue36,
        behind,
      }),
    );
});

/** A row's publisher stops by itself this long after its measured seconds (warm-up and reports fit in it). */
const PUBLISH_SLACK_S = 5;

/** The share of the offered deliveries a row must reach for its numbers to count. */
const KEPT_UP = 0.95;

const cpuUsPerDelivery = (r: Result): number => (r.deliveriesPerSec > 0 ? (r.cpuPct / 100 / r.deliveriesPerSec) * 1e6 : NaN);

async function runGateway(shape: Shape, workers: number, deflate: boolean, publishPerSec = 0, coalesceMs = 0): Promise<Result> {
  const nats = await startNats();
  const gw = await startGatewayProc(
    nats.url,
    workers,
    deflate ? ["--compression", "shared"] : [],
    undefined,
    coalesceMs > 0 ? { COALESCE: `${coalesceMs}ms` } : undefined,
  );
  const url = `ws://127.0.0.1:${gw.port}/ws${coalesceMs > 0 ? "?coalesce=1" : ""}`;
  const gwKids = await runClients(url, "bench.fanout", shape.clients, shape.procs, deflate);
  const nc = await connect({ servers: nats.url });
  const js = jetstream(nc);
  const pad = "x".repeat(shape.size);
  const enc = new TextEncoder();
  let s = 0;
  const publishes = new Set<Promise<unknown>>();
  let failed = 0;
  const pacer = pace(shape.rate, shape.spacing, (shape.seconds + PUBLISH_SLACK_S) * 1000, () => {
    const p = js.publish("ev.bench.fanout", enc.encode(`{"t":${nowUs()},"s":${++s},"x":"${pad}"}`)).catch(() => void failed++);
    publishes.add(p);
    void p.finally(() => publishes.delete(p));
  });
  const loader = publishPerSec > 0 ? publishLoad(gw.port, publishPerSec) : undefined;
  const g = await collect(gwKids, shape.seconds, gw.proc.pid!);
  if (loader) g.load = await loader.stop();
  pacer.stop();
  await Promise.allSettled([...publishes]);
  if (failed > 0) console.error(`bench:fanout: ${failed} of ${s} JetStream publishes failed`);
  for (const c of gwKids) c.send({ type: "exit" });
  await nc.close();
  gw.proc.kill("SIGTERM");
  nats.proc.kill("SIGTERM");
  await until(() => gw.proc.exitCode !== null || undefined, 15_000, "gateway exit");
  return g;
}

/** Bare uWS, same clients, same rate. */
async function runBare(shape: Shape, deflate: boolean): Promise<Result> {
  const args = [
    "--role",
    "bare",
    "--rate",
    String(shape.rate),
    "--size",
    String(shape.size),
    "--spacing",
    shape.spacing,
    "--seconds",
    String(shape.seconds),
    ...(deflate ? ["--compress"] : []),
  ];
  const bare = fork(process.argv[1]!, args, { stdio: "inherit" });
  const port = await new Promise<number>((res) => bare.once("message", (m: { port: number }) => res(m.port)));
  const bareKids = await runClients(`ws://127.0.0.1:${port}/ws`, "bench", shape.clients, shape.procs, deflate);
  bare.send({ type: "go" });
  const b = await collect(bareKids, shape.seconds, bare.pid!);
  for (const c of bareKids) c.send({ type: "exit" });
  bare.kill("SIGKILL");
  return b;
}
