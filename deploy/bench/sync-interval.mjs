#!/usr/bin/env node
// What `sync_interval: always` costs: starts a local 3-node JetStream cluster from deploy/nats/cluster/node.conf
// once with the default (ack before fsync, flush every 2 min) and once with fsync on every write, publishes to
// an R1 and an R3 file stream, one at a time ("sync") and with a window of publishes in flight ("async"), and
// prints msgs/s and ack latency p50/p99 per case plus the always/default ratios.
//
//   node deploy/bench/sync-interval.mjs [--msgs 5000] [--size 128] [--window 256] [--repeat 1] [--single] [--json]
//
// --single runs one standalone JetStream node (R1 only) instead of the cluster. --repeat R alternates default/always
// R times on fresh servers and reports the median of each figure. The servers are the test kit's (startNatsCluster,
// startNatsServer from dist/, so build first): loopback ports only, every wait bounded.
import { parseArgs } from "node:util";
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, StorageType } from "@nats-io/jetstream";

// The servers come from the project's test kit, compiled (`npm run bench:sync-interval` builds first).
const kit = async (file) => {
  try {
    return await import(`#testkit/${file}`);
  } catch (e) {
    if (e?.code === "ERR_MODULE_NOT_FOUND" && String(e.message).includes("/dist/"))
      throw new Error(`dist/gateway/testkit/${file} is missing: run \`npm run build\` first`);
    throw e;
  }
};
const { startNatsCluster } = await kit("nats-cluster.js");
const { startNatsServer } = await kit("nats-server.js");

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

/** `sync` is "default" (ack before fsync, flush every 2 min) or "always" (fsync every write before the ack). */
async function startServers(sync) {
  if (NODES === 3) {
    const c = await startNatsCluster({ sync });
    return { urls: c.urls, stop: () => c.stop() };
  }
  const s = await startNatsServer({ config: `jetstream { sync_interval: ${sync === "always" ? "always" : '"120s"'} }\n` });
  return { urls: [s.url], stop: () => s.stop() };
}

/** The stream's subject interest reaches the other nodes over the routes a moment after the stream exists; until
 * then a publish through another node gets "no responders". Retries that (bounded) before anything is timed. */
async function firstAck(js, subject, payload, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await js.publish(subject, payload);
    } catch (e) {
      if (!/no responders/i.test(`${e} ${e?.cause ?? ""}`) || Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
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
  const cluster = await startServers(sync);
  const nc = await connect({ servers: cluster.urls });
  const results = {};
  try {
    const jsm = await jetstreamManager(nc);
    const js = jetstream(nc);
    const payload = new Uint8Array(SIZE).fill(120);
    for (const replicas of NODES === 3 ? [1, 3] : [1]) {
      const name = `BENCH_R${replicas}`;
      await jsm.streams.add({ name, subjects: [`bench.r${replicas}.>`], storage: StorageType.File, num_replicas: replicas });
      await firstAck(js, `bench.r${replicas}.warmup`, payload);
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
  samples.default.push(await runOne("default"));
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
  console.log(
    `nats-server ${NODES === 3 ? "3-node cluster" : "single node"}, file streams, ${fmt(MSGS)} msgs of ${SIZE} B, async window ${WINDOW}, ${REPEAT === 1 ? "one run" : `median of ${REPEAT} runs`}`,
  );
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
