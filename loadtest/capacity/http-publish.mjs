// autocannon against one gateway: GET /healthz (the pure HTTP cost of the gateway's listener) and
// POST /v1/publish/{channel} (the same HTTP cost plus JSON validation and a JetStream publish waited on
// until its ack). Same connections, same duration, back to back, so publish/healthz is a ratio on one machine.
//
//   node loadtest/capacity/http-publish.mjs --port 9000 [--duration 10] [--connections 32] [--json out.json]
import { createRequire } from "node:module";
import { parseArgs } from "node:util";
import { writeFileSync } from "node:fs";

const require = createRequire(new URL("../package.json", import.meta.url));

/** Loads autocannon from loadtest/node_modules (a CommonJS package). */
export function loadAutocannon() {
  return require("autocannon");
}

/** Runs autocannon once; resolves with its result object (also what `autocannon --json` prints). */
export function cannon(opts) {
  const autocannon = loadAutocannon();
  return new Promise((resolve, reject) => {
    autocannon({ ...opts, timeout: 10 }, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

/** The figures we report from one autocannon result. */
export function summarize(r) {
  return {
    title: r.title,
    url: r.url,
    connections: r.connections,
    durationS: r.duration,
    requests: r.requests.total,
    reqPerSec: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    p999: r.latency.p99_9,
    max: r.latency.max,
    ok2xx: r["2xx"],
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    statusCodes: Object.fromEntries(Object.entries(r.statusCodeStats ?? {}).map(([k, v]) => [k, v.count])),
  };
}

/**
 * healthz baseline, then publish. `channel` is published to; afterwards its last stored seq is read back so
 * the report can show 2xx responses = messages stored.
 */
export async function runHttpCapacity({ port, duration = 10, connections = 32, channel = "cap.http", meter }) {
  // meter (optional): called before each run, returns a function giving that run's CPU figures.
  const cpu = {};
  const base = `http://127.0.0.1:${port}`;
  // One publish before measuring: warms the path, and history of a channel that holds no message answers
  // 502 "message not found" (gateway behaviour at the time of writing) instead of an empty list.
  const warm = await fetch(`${base}/v1/publish/${channel}`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  if (warm.status !== 201) throw new Error(`warm-up publish: HTTP ${warm.status} ${await warm.text()}`);
  const seqBefore = await lastSeq(base, channel);
  let stop = meter?.();
  const healthz = await cannon({ title: "GET /healthz", url: `${base}/healthz`, connections, duration });
  cpu.healthz = stop?.();
  const body = JSON.stringify({ kind: "capacity", price: 12.5, tags: ["a", "b"], note: "autocannon publish through the gateway into JetStream" });
  stop = meter?.();
  const publish = await cannon({
    title: `POST /v1/publish/${channel}`,
    url: `${base}/v1/publish/${channel}`,
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    connections,
    duration,
  });
  cpu.publish = stop?.();
  const seqAfter = await lastSeq(base, channel);
  const h = summarize(healthz);
  const p = summarize(publish);
  return {
    bodyBytes: Buffer.byteLength(body),
    healthz: h,
    publish: p,
    cpu,
    stored: seqAfter - seqBefore,
    ratio: { reqPerSec: p.reqPerSec / h.reqPerSec, p50: p.p50 / h.p50, p99: p.p99 / h.p99 },
    raw: { healthz, publish },
  };
}

/** The stream's last sequence (it counts every channel of the stream; nothing else writes while we run). */
async function lastSeq(base, channel) {
  const res = await fetch(`${base}/v1/channels/${channel}/messages?last=1`);
  if (!res.ok) throw new Error(`history of ${channel}: HTTP ${res.status}`);
  const j = await res.json();
  return j.lastSeq ?? 0;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      port: { type: "string" },
      duration: { type: "string", default: "10" },
      connections: { type: "string", default: "32" },
      channel: { type: "string", default: "cap.http" },
      json: { type: "string" },
    },
  });
  if (!values.port) {
    console.error("usage: http-publish.mjs --port <gateway port> [--duration s] [--connections n] [--json file]");
    process.exit(2);
  }
  const r = await runHttpCapacity({
    port: Number(values.port),
    duration: Number(values.duration),
    connections: Number(values.connections),
    channel: values.channel,
  });
  const { raw: _raw, ...figures } = r;
  if (values.json) writeFileSync(values.json, JSON.stringify(r, null, 2));
  console.log(JSON.stringify(figures, null, 2));
}
