#!/usr/bin/env node
// What `sync_interval: always` costs: starts a local 3-node JetStream cluster from deploy/nats/cluster/node.conf
// once with the default (ack before fsync, flush every 2 min) and once with fsync on every write, publishes to
// an R1 and an R3 file stream, one at a time ("sync") and with a window of publishes in flight ("async"), and
// prints msgs/s and ack latency p50/p99 per case plus the always/default ratios.
//
//   node deploy/bench/sync-interval.mjs [--msgs 5000] [--size 128] [--window 256] [--repeat 1] [--single] [--json]
//
// --single runs one node (R1 only) instead of the cluster. --repeat R alternates default/always R times on fresh
// clusters and reports the median of each figure. Only loopback ports are used; every wait is bounded.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, StorageType } from "@nats-io/jetstream";

const ROOT = resolve(import.meta.dirname, "../..");
const BIN = process.env.NATS_SERVER_BIN ?? join(ROOT, ".tools/bin/nats-server");
const CONF = join(ROOT, "deploy/nats/cluster/node.conf");

const { values: args } = parseArgs({
  options: {
    msgs: { type: "string", default: "5000" },
    size: { type: "string", default: "128" },
    window: { type: "string", default: "256" },
    repeat: { type: "string", default: "1" },
    single: { type: "boolean", default: false },
    json: { type: "boolean", default: false },
  },
});
const MSGS = Number(args.msgs);
const SIZE = Number(args.size);
const WINDOW = Number(args.window);
const REPEAT = Number(args.repeat);
const NODES = args.single ? 1 : 3;

async function freePorts(count) {
  const servers = await Promise.all(Array.from({ length: count }, () => new Promise((res, rej) => {
    const s = createServer();
    s.once("error", rej);
    s.listen(0, "127.0.0.1", () => res(s));
  })));
  const ports = servers.map((s) => s.address().port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

async function poll(check, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try { const v = await check(); if (v) return v; } catch { /* not ready yet */ }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function startCluster(sync) {
  const dir = mkdtempSync(join(tmpdir(), "fgw-bench-sync-"));
  const ports = await freePorts(NODES * 3);
  const routes = Array.from({ length: 3 }, (_, i) => `nats://127.0.0.1:${ports[NODES + Math.min(i, NODES - 1)]}`);
  const procs = [];
  for (let i = 0; i < NODES; i++) {
    const store = join(dir, `n${i + 1}`);
    mkdirSync(store);
    const env = {
      ...process.env,
      NATS_NAME: `n${i + 1}`,
      NATS_LISTEN: `127.0.0.1:${ports[i]}`,
      NATS_CLUSTER_LISTEN: `127.0.0.1:${ports[NODES + i]}`,
      NATS_HTTP: `127.0.0.1:${ports[2 * NODES + i]}`,
      NATS_ROUTE_1: routes[0], NATS_ROUTE_2: routes[1], NATS_ROUTE_3: routes[2],
      NATS_STORE_DIR: store,
      NATS_SYNC_INTERVAL: sync,
    };
    procs.push(spawn(BIN, ["-c", CONF], { env, stdio: "ignore" }));
  }
  const monitors = ports.slice(2 * NODES);
  await poll(async () => {
    const leaders = await Promise.all(monitors.map(async (p) => {
      const r = await fetch(`http://127.0.0.1:${p}/healthz`);
      if (!r.ok) return undefined;
      return (await (await fetch(`http://127.0.0.1:${p}/jsz`)).json()).meta_cluster?.leader ?? (NODES === 1 ? "n1" : undefined);
    }));
    return leaders[0] && leaders.every((l) => l === leaders[0]);
  }, 30_000, "JetStream meta leader");
  return {
    urls: ports.slice(0, NODES).map((p) => `nats://127.0.0.1:${p}`),
    async stop() {
      await Promise.all(procs.map((p) => new Promise((r) => {
        if (p.exitCode !== null) return r();
        p.once("exit", r);
        p.kill("SIGTERM");
        setTimeout(() => p.kill("SIGKILL"), 5_000).unref();
      })));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function pct(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

function summary(latencies, elapsedMs) {
  const sorted = Float64Array.from(latencies).sort();
  return { rate: (latencies.length / elapsedMs) * 1000, p50: pct(sorted, 0.5), p99: pct(sorted, 0.99) };
}

async function publishSync(js, subject, payload, n) {
  const lat = [];
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const s = performance.now();
    await js.publish(subject, payload);
    lat.push(performance.now() - s);
  }
  return summary(lat, performance.now() - t0);
}

async function publishAsync(js, subject, payload, n, window) {
  const lat = [];
  let next = 0;
  const t0 = performance.now();
  const lane = async () => {
    while (next < n) {
      next++;
      const s = performance.now();
      await js.publish(subject, payload);
      lat.push(performance.now() - s);
    }
  };
  await Promise.all(Array.from({ length: Math.min(window, n) }, lane));
  return summary(lat, performance.now() - t0);
}

async function runOne(sync) {
  const cluster = await startCluster(sync);
  const nc = await connect({ servers: cluster.urls });
  const results = {};
  try {
    const jsm = await jetstreamManager(nc);
    const js = jetstream(nc);
    const payload = new Uint8Array(SIZE).fill(120);
    for (const replicas of NODES === 3 ? [1, 3] : [1]) {
      const name = `BENCH_R${replicas}`;
      await jsm.streams.add({ name, subjects: [`bench.r${replicas}.>`], storage: StorageType.File, num_replicas: replicas });
      await publishAsync(js, `bench.r${replicas}.warmup`, payload, 500, 32);
      results[`R${replicas} sync`] = await publishSync(js, `bench.r${replicas}.sync`, payload, MSGS);
      results[`R${replicas} async`] = await publishAsync(js, `bench.r${replicas}.async`, payload, MSGS, WINDOW);
    }
  } finally {
    await nc.close();
    await cluster.stop();
  }
  return results;
}

const fmt = (v, d = 0) => v.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

const samples = { default: [], always: [] };
for (let i = 0; i < REPEAT; i++) {
  samples.default.push(await runOne("120s"));
  samples.always.push(await runOne("always"));
}
const runs = {};
for (const mode of ["default", "always"]) {
  runs[mode] = {};
  for (const c of Object.keys(samples[mode][0])) {
    runs[mode][c] = Object.fromEntries(["rate", "p50", "p99"].map((k) => [k, median(samples[mode].map((s) => s[c][k]))]));
  }
}
if (args.json) {
  console.log(JSON.stringify({ msgs: MSGS, size: SIZE, window: WINDOW, nodes: NODES, repeat: REPEAT, runs, samples }, null, 2));
} else {
  console.log(`nats-server ${NODES === 3 ? "3-node cluster" : "single node"}, file streams, ${fmt(MSGS)} msgs of ${SIZE} B, async window ${WINDOW}, ${REPEAT === 1 ? "one run" : `median of ${REPEAT} runs`}`);
  console.log("| case | sync_interval | msgs/s | ack p50 ms | ack p99 ms |");
  console.log("|---|---|---:|---:|---:|");
  for (const c of Object.keys(runs.default)) {
    for (const mode of ["default", "always"]) {
      const r = runs[mode][c];
      console.log(`| ${c} | ${mode === "default" ? "default (2 min)" : "always"} | ${fmt(r.rate)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} |`);
    }
  }
  console.log("\n| case | always/default msgs/s | always/default p50 | always/default p99 |");
  console.log("|---|---:|---:|---:|");
  for (const c of Object.keys(runs.default)) {
    const d = runs.default[c];
    const a = runs.always[c];
    console.log(`| ${c} | ${fmt(a.rate / d.rate, 2)}x | ${fmt(a.p50 / d.p50, 2)}x | ${fmt(a.p99 / d.p99, 2)}x |`);
  }
}
