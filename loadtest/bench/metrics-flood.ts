// bench:metrics-flood — does a flood of /metrics requests on the public port move delivery latency?
// Two gateways, one after the other, same clients and publisher: "public" (metrics on the public port, as
// with authentication off) and "admin" (--admin-port 0: metrics on the primary's admin listener, the
// public port answers 404), and for reference a flood of GET /healthz, the cheapest route. In each, clients receive R msg/s for S s quietly, then S s while F concurrent
// loops request /metrics on the public port as fast as they can. Reported: p50/p99 of delivery latency
// quiet and flooded, their ratio per gateway, and the flood's request rate.
// Usage: npm run bench -- metrics-flood [--clients 200] [--rate 200] [--seconds 5] [--flooders 32] [--workers 2]
import { fork, type ChildProcess } from "node:child_process";
import { resolve } from "node:path";
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { fmt, nowUs, percentile, startGatewayProc, startNats, until } from "./common.js";
import { std } from "../kit/flags.js";
import { defineBench, KEEP_RUNNING, runBench } from "../kit/main.js";

type Report = { received: number; latUs: number[] };
const FANOUT = resolve(import.meta.dirname, "fanout.js");

/** The flooder role: F loops of GET url until told to stop (or 120 s); reports requests made. */
async function floodMain(url: string, loops: number): Promise<void> {
  let stop = false;
  let n = 0;
  process.on("message", () => {
    stop = true;
  });
  const end = Date.now() + 120_000;
  await Promise.all(
    Array.from({ length: loops }, async () => {
      while (!stop && Date.now() < end) {
        const r = await fetch(url).catch(() => undefined);
        await r?.arrayBuffer().catch(() => undefined);
        n++;
      }
    }),
  );
  process.send!({ requests: n });
  process.exit(0);
}

async function clients(url: string, n: number, procs: number): Promise<ChildProcess[]> {
  const per = Math.ceil(n / procs);
  const kids = Array.from({ length: procs }, () =>
    fork(FANOUT, ["--role", "client", "--url", url, "--channel", "bench.flood", "--k", String(per)], { stdio: "inherit" }),
  );
  await Promise.all(kids.map((c) => new Promise<void>((r) => c.once("message", () => r()))));
  return kids;
}

const report = (kids: ChildProcess[]) =>
  Promise.all(
    kids.map(
      (c) =>
        new Promise<Report>((r) => {
          c.once("message", (m: Report) => r(m));
          c.send({ type: "report" });
        }),
    ),
  );

async function window(kids: ChildProcess[], seconds: number): Promise<number[]> {
  await report(kids); // reset
  await new Promise((r) => setTimeout(r, seconds * 1_000));
  return (await report(kids)).flatMap((r) => r.latUs).sort((a, b) => a - b);
}

async function leg(name: string, extra: string[], path: string, o: { clients: number; rate: number; seconds: number; flooders: number; workers: number }) {
  const nats = await startNats();
  const gw = await startGatewayProc(nats.url, o.workers, extra);
  const kids = await clients(`ws://127.0.0.1:${gw.port}/ws`, o.clients, 2);
  const nc = await connect({ servers: nats.url });
  const js = jetstream(nc);
  const enc = new TextEncoder();
  let stop = false;
  const pub = (async () => {
    const end = Date.now() + (o.seconds * 2 + 10) * 1_000;
    for (let s = 0; !stop && Date.now() < end; s++) {
      const tick = Date.now();
      await js.publish("ev.bench.flood", enc.encode(`{"t":${nowUs()},"s":${s}}`));
      const wait = 1_000 / o.rate - (Date.now() - tick);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  })();
  await new Promise((r) => setTimeout(r, 1_000)); // warm-up
  const quiet = await window(kids, o.seconds);
  const flooder = fork(process.argv[1]!, ["--role", "flood", "--url", `http://127.0.0.1:${gw.port}${path}`, "--flooders", String(o.flooders)], {
    stdio: "inherit",
  });
  const flooded = await window(kids, o.seconds);
  const requests = await new Promise<number>((r) => {
    flooder.once("message", (m: { requests: number }) => r(m.requests));
    flooder.send("stop");
  });
  stop = true;
  await pub;
  for (const c of kids) c.send({ type: "exit" });
  await nc.close();
  gw.proc.kill("SIGTERM");
  nats.proc.kill("SIGTERM");
  await until(() => gw.proc.exitCode !== null || undefined, 15_000, "gateway exit");
  const p = (a: number[], q: number) => percentile(a, q) / 1000;
  return {
    name,
    quiet: { p50: p(quiet, 50), p99: p(quiet, 99), n: quiet.length },
    flooded: { p50: p(flooded, 50), p99: p(flooded, 99), n: flooded.length },
    floodPerSec: requests / o.seconds,
  };
}

const BENCH = defineBench("metrics-flood", {
  clients: std("clients", { default: 200, quick: 50 }),
  rate: std("rate", { default: 200, quick: 100 }),
  seconds: std("seconds", { default: 5, quick: 1 }),
  flooders: { type: "number", integer: true, min: 1, default: 32, quick: 8, help: "concurrent request loops in the flood" },
  workers: std("workers", { default: 2 }),
  quick: std("quick"),
  role: { type: "string", default: "main", choices: ["main", "flood"], internal: true, help: "the process's part" },
  url: { type: "string", internal: true, help: "flood: the URL to request" },
});

runBench(BENCH, async ({ flags: v }) => {
  if (v.role === "flood") return floodMain(v.url!, v.flooders).then(() => KEEP_RUNNING);
  const o = { clients: v.clients, rate: v.rate, seconds: v.seconds, flooders: v.flooders, workers: v.workers };
  const rows = [
    await leg("public: /metrics on the public port (auth off, no admin listener)", [], "/metrics", o),
    await leg("admin: --admin-port 0 (the public /metrics is a 404)", ["--admin-port", "0"], "/metrics", o),
    await leg("reference: the same flood of GET /healthz (what any HTTP request costs)", [], "/healthz", o),
  ];
  console.log(
    `\nbench:metrics-flood — ${o.clients} clients × ${o.rate} msg/s, ${o.workers} workers; ${o.seconds} s quiet, then ${o.seconds} s with ${o.flooders} loops requesting a path on the public port`,
  );
  console.log("| gateway | flood req/s | quiet p50 / p99 ms | flooded p50 / p99 ms | p99 flooded/quiet |\n|---|---:|---|---|---:|");
  for (const r of rows) {
    console.log(
      `| ${r.name} | ${fmt(r.floodPerSec)} | ${fmt(r.quiet.p50, 2)} / ${fmt(r.quiet.p99, 2)} | ${fmt(r.flooded.p50, 2)} / ${fmt(r.flooded.p99, 2)} | **${(r.flooded.p99 / r.quiet.p99).toFixed(2)}** |`,
    );
  }
  console.log(JSON.stringify(rows));
});
