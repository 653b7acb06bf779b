// bench:webhook — the events webhook through one endpoint: N events are stored in the events stream (straight
// into JetStream, as the workers record them) while one gateway (1 worker) sends them to a local HTTP
// receiver that answers 200 at once; each leg measures events/s from the first stored to the last received,
// and the gateway's CPU (primary, where the sender runs, and the idle worker) per event. Legs: ordered
// (EVENTS_WEBHOOK_CONCURRENCY=1, the default: one batch in flight) and unordered with more batches in flight.
// The receiver checks every event arrived, and in the ordered leg in id order.
// Usage: npm run bench -- webhook [--events 20000] [--batch 100] [--concurrency 1,4] [--latency 0] [--rounds 3] [--quick]
import http from "node:http";
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { fmt, startGatewayProc, startNats, until } from "./common.js";
import { TreeCpu } from "../compare/proc.js";
import { std } from "../kit/flags.js";
import { defineBench, runBench } from "../kit/main.js";
import { median, runRounds, alternate } from "../kit/rounds.js";
import { commandLine, reportPath, writeReport } from "../kit/results.js";

const BENCH = defineBench("webhook", {
  events: { type: "number", integer: true, min: 100, default: 20_000, quick: 2_000, help: "events stored per leg" },
  batch: { type: "number", integer: true, min: 1, max: 10_000, default: 100, help: "EVENTS_WEBHOOK_BATCH" },
  concurrency: { type: "list", default: ["1", "4"], help: "EVENTS_WEBHOOK_CONCURRENCY of each leg (1: ordered)" },
  latency: { type: "number", min: 0, max: 10_000, default: 0, help: "ms the receiver takes to answer each request (a backend across a network)" },
  rounds: std("rounds", { default: 3, quick: 1 }),
  quick: std("quick"),
  out: std("out"),
  "no-write": std("no-write"),
  json: std("json"),
});

type Leg = { concurrency: number; eventsPerS: number; cpuUsPerEvent: number; received: number; inOrder: boolean; maxInFlight: number };

/** The backend: counts the events of each request, whether ids rise across arrivals, and the requests open at once. */
async function receiver(latencyMs: number) {
  const r = { ids: new Set<number>(), lastId: 0, inOrder: true, open: 0, maxOpen: 0, lastAt: 0 };
  const server = http.createServer((req, res) => {
    r.open++;
    r.maxOpen = Math.max(r.maxOpen, r.open);
    const chunks: Buffer[] = [];
    req.on("data", (d: Buffer) => chunks.push(d));
    req.on("end", () => {
      for (const e of (JSON.parse(Buffer.concat(chunks).toString()) as { events: { id: number }[] }).events) {
        if (e.id < r.lastId) r.inOrder = false;
        r.lastId = Math.max(r.lastId, e.id);
        r.ids.add(e.id);
      }
      const answer = () => {
        r.lastAt = performance.now();
        r.open--;
        res.writeHead(200).end();
      };
      if (latencyMs > 0) setTimeout(answer, latencyMs);
      else answer();
    });
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  return { r, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/events`, close: () => server.close() };
}

async function leg(natsUrl: string, n: number, batch: number, concurrency: number, latencyMs: number, tag: string): Promise<Leg> {
  const rec = await receiver(latencyMs);
  const stream = `BENCH_EVENTS_${tag}`;
  const subject = `bench.events${tag}`;
  const gw = await startGatewayProc(natsUrl, 1, [], undefined, {
    EVENTS_WEBHOOK_URL: rec.url,
    EVENTS_WEBHOOK_BATCH: String(batch),
    EVENTS_WEBHOOK_CONCURRENCY: String(concurrency),
    EVENTS_STREAM: stream,
    EVENTS_SUBJECT: subject,
  });
  const nc = await connect({ servers: natsUrl });
  try {
    const js = jetstream(nc);
    const cpu = new TreeCpu(gw.proc.pid!).start();
    const t0 = performance.now();
    // Stored as the workers store them: one JSON object per event under <subject>.<type>, pipelined.
    const time = new Date().toISOString();
    for (let i = 0; i < n; i += 500) {
      const acks = [];
      for (let j = i; j < Math.min(n, i + 500); j++)
        acks.push(
          js.publish(
            `${subject}.subscribe`,
            JSON.stringify({ type: "subscribe", time, user: `u${j % 1000}`, client: `c${j}`, transport: "websocket", channel: `bench.ch${j % 100}` }),
          ),
        );
      await Promise.all(acks);
    }
    await until(() => rec.r.ids.size >= n, 300_000, `${n} events at the receiver`);
    const used = cpu.end();
    const s = (rec.r.lastAt - t0) / 1000;
    return {
      concurrency,
      eventsPerS: n / s,
      cpuUsPerEvent: (used.nodeS * 1e6) / n,
      received: rec.r.ids.size,
      inOrder: rec.r.inOrder,
      maxInFlight: rec.r.maxOpen,
    };
  } finally {
    await nc.close();
    gw.proc.kill("SIGTERM");
    await new Promise((ok) => gw.proc.once("exit", ok));
    rec.close();
  }
}

runBench(BENCH, async ({ flags: v, argv }) => {
  const concurrencies = v.concurrency.map(Number);
  if (concurrencies.some((c) => !Number.isInteger(c) || c < 1 || c > 64)) throw new Error("--concurrency: whole numbers from 1 to 64");
  const nats = await startNats();
  let tag = 0;
  try {
    const rounds = await runRounds({ rounds: v.rounds }, async (round) => {
      const legs: Leg[] = [];
      for (const c of alternate(concurrencies, round)) {
        const l = await leg(nats.url, v.events, v.batch, c, v.latency, String(tag++));
        process.stderr.write(
          `round ${round + 1}, concurrency ${c}: ${fmt(l.eventsPerS)} events/s, ${fmt(l.cpuUsPerEvent, 1)} µs CPU/event, in order ${l.inOrder}, ${l.maxInFlight} in flight\n`,
        );
        legs.push(l);
      }
      return legs;
    });
    const rows = concurrencies.map((c) => {
      const of = rounds.map((r) => r.find((l) => l.concurrency === c)!);
      return {
        concurrency: c,
        eventsPerS: median(of.map((l) => l.eventsPerS)),
        cpuUsPerEvent: median(of.map((l) => l.cpuUsPerEvent)),
        rounds: of.map((l) => Math.round(l.eventsPerS)),
        allReceived: of.every((l) => l.received === v.events),
        inOrder: of.every((l) => l.inOrder),
        maxInFlight: Math.max(...of.map((l) => l.maxInFlight)),
      };
    });
    const table = [
      "| EVENTS_WEBHOOK_CONCURRENCY | events/s (median) | rounds | gateway CPU per event | all received | in id order | most requests open |",
      "|---:|---:|---|---:|---|---|---:|",
      ...rows.map(
        (r) =>
          `| ${r.concurrency}${r.concurrency === 1 ? " (ordered)" : ""} | **${fmt(r.eventsPerS)}** | ${r.rounds.map((x) => fmt(x)).join(", ")} | ${fmt(r.cpuUsPerEvent, 1)} µs | ${r.allReceived ? "yes" : "**no**"} | ${r.inOrder ? "yes" : "no"} | ${r.maxInFlight} |`,
      ),
    ].join("\n");
    const command = commandLine("webhook", argv);
    const text = `# Events webhook through one endpoint\n\n\`${command}\` — ${new Date().toISOString()}; ${v.events} events per leg, batches of ${v.batch}, a local receiver answering 200 ${v.latency > 0 ? `after ${v.latency} ms` : "at once"}, one gateway with 1 worker, one nats-server.\n\n${table}\n`;
    process.stdout.write(v.json ? `${JSON.stringify({ events: v.events, batch: v.batch, rows })}\n` : `${text}\n`);
    const path = reportPath(v, v.latency > 0 ? `webhook-latency${v.latency}ms.md` : "webhook.md");
    if (path) writeReport(path, text);
    return rows.every((r) => r.allReceived && (r.concurrency > 1 || r.inOrder)) ? 0 : 1;
  } finally {
    await nats.stop();
  }
});
