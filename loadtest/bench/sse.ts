// bench:sse — fan-out over Server-Sent Events next to WebSockets: N SSE streams and N WebSocket
// subscriptions of one channel on one worker, M messages published at full speed into the stream; each leg
// measures the time until every client has every message, deliveries/s, and the worker's CPU per 1,000
// deliveries (utime + stime from /proc). Clients are lean: they count events/frames without parsing JSON.
// Usage: npm run bench -- sse [--clients 200] [--messages 2000] [--size 100] [--quick]
import http from "node:http";
import { readFileSync } from "node:fs";
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import WebSocket from "ws";
import { childPids, fmt, startGatewayProc, startNats, until } from "./common.js";
import { std } from "../kit/flags.js";
import { defineBench, runBench } from "../kit/main.js";

type Counter = { count: number; close(): void };

function cpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime + stime in clock ticks (100 Hz)
}

/** An SSE reader that counts `id:` lines (one per message event). */
function sseClient(port: number, channel: string): Promise<Counter> {
  return new Promise((resolve, reject) => {
    const c: Counter = { count: 0, close: () => req.destroy() };
    let tail = "";
    const req = http.get({ host: "127.0.0.1", port, path: `/v1/channels/${channel}/events`, agent: false }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`sse status ${res.statusCode}`));
      res.setEncoding("latin1");
      res.on("data", (d: string) => {
        // Every event's id line follows a line break (the preamble ends with a blank line).
        const s = tail + d;
        for (let i = s.indexOf("\nid: "); i >= 0; i = s.indexOf("\nid: ", i + 1)) c.count++;
        tail = s.slice(-4);
      });
      resolve(c);
    });
    req.on("error", reject);
  });
}

/** A WebSocket subscriber that counts `msg` frames. */
function wsClient(port: number, channel: string): Promise<Counter> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
    const c: Counter = { count: 0, close: () => ws.close() };
    ws.on("open", () => ws.send(JSON.stringify({ op: "sub", id: 1, channel })));
    ws.on("message", (d: Buffer) => {
      if (d.length > 9 && d[7] === 0x6d)
        c.count++; // {"op":"m…
      else if (d.includes('"op":"ok"')) resolve(c);
    });
    ws.on("error", reject);
  });
}

async function leg(kind: "sse" | "ws", port: number, workerPid: number, natsUrl: string, clients: number, messages: number, size: number) {
  const channel = `bench.${kind}.${Date.now()}`;
  const conns: Counter[] = [];
  for (let i = 0; i < clients; i += 50)
    conns.push(...(await Promise.all(Array.from({ length: Math.min(50, clients - i) }, () => (kind === "sse" ? sseClient : wsClient)(port, channel)))));
  // Both transports wait for the feed's first message before the clock starts.
  const nc = await connect({ servers: natsUrl });
  const js = jetstream(nc);
  const payload = new TextEncoder().encode(JSON.stringify({ pad: "x".repeat(Math.max(0, size - 10)) }));
  await js.publish(`ev.${channel}`, payload);
  await until(() => conns.every((c) => c.count >= 1), 30_000, `${kind} first message`);
  const cpu0 = cpuMs(workerPid);
  const t0 = performance.now();
  const pending: Promise<unknown>[] = [];
  for (let i = 0; i < messages; i++) {
    pending.push(js.publish(`ev.${channel}`, payload));
    if (pending.length >= 200) await Promise.all(pending.splice(0));
  }
  await Promise.all(pending);
  await until(() => conns.every((c) => c.count >= messages + 1), 120_000, `${kind} all delivered`);
  const ms = performance.now() - t0;
  const cpu = cpuMs(workerPid) - cpu0;
  for (const c of conns) c.close();
  await nc.close();
  const deliveries = clients * messages;
  return { kind, ms, perSec: (deliveries / ms) * 1000, cpuPer1k: (cpu / deliveries) * 1000 };
}

const BENCH = defineBench("sse", {
  clients: std("clients", { default: 200, quick: 50 }),
  messages: std("messages", { default: 2000, quick: 500 }),
  size: std("size", { default: 100 }),
  quick: std("quick"),
});

runBench(BENCH, async ({ flags: { clients, messages, size } }) => {
  const nats = await startNats();
  const gw = await startGatewayProc(nats.url, 1, ["--backpressure-bytes", "4MiB", "--max-backpressure-bytes", "64MiB"]);
  const worker = childPids(gw.proc.pid!)[0]!;
  const rows = [];
  for (const kind of ["ws", "sse", "ws", "sse"] as const) rows.push(await leg(kind, gw.port, worker, nats.url, clients, messages, size));
  console.log(`\nbench:sse — ${clients} clients of one channel on one worker, ${fmt(messages)} messages of ~${size} B each, 2 rounds`);
  console.log("| transport | time to deliver all (ms) | deliveries/s | worker CPU ms per 1,000 deliveries |\n|---|---:|---:|---:|");
  for (const r of rows) console.log(`| ${r.kind} | ${fmt(r.ms)} | ${fmt(r.perSec)} | ${r.cpuPer1k.toFixed(3)} |`);
  gw.proc.kill("SIGTERM");
  await nats.stop();
});
