// compare.md: per workload row, the gateway on JetStream, on Redis, and the users' own Redis figures.
import type { CompareOptions, Row, Broker } from "./workload.js";
import { REFERENCE, rowKey } from "./workload.js";

export type Measurement = {
  row: Row;
  broker: Broker;
  clients: number;
  processes: number;
  passes: number;
  intervalMs: number;
  ok: boolean;
  notes: string[];
  connectS?: number;
  received?: number;
  expected?: number;
  lost?: number;
  duplicated?: number;
  outOfOrder?: number;
  connected?: number;
  stopReason?: string;
  minMs?: number;
  maxMs?: number;
  meanMs?: number;
  hmeanMs?: number;
  p50Ms?: number;
  p99Ms?: number;
  published?: number;
  pubFailed?: number;
  pubRate?: number;
  /** Highest per-process average CPU of the subscriber processes while messages flowed, % of one core. */
  subCpuAvgMax?: number;
  subCpuPeak?: number;
  /** Sum of the subscriber processes' averages: how much of the machine the load generator itself took. */
  subCpuSum?: number;
  pubCpuAvg?: number;
  /** The gateway's node processes (primary + workers) and its broker child, % of one core, publish to end. */
  gatewayCpuPct?: number;
  brokerCpuPct?: number;
  wallS?: number;
  /** 1-minute load average of the machine when the row ended (other work on the box shows here). */
  loadAvg?: number;
};

export type RunMeta = { startedAt: Date; finishedAt: Date; opts: CompareOptions; cores: number; cpuModel: string; node: string };

export const BROKER_LABEL: Record<Broker, string> = { jetstream: "gateway on JetStream", redis: "gateway on Redis pub/sub" };

const ms = (v: number | undefined): string => (v === undefined || !Number.isFinite(v) ? "—" : v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0));
const int = (v: number | undefined): string => (v === undefined || !Number.isFinite(v) ? "—" : v.toLocaleString("en-US"));
const pct = (v: number | undefined): string => (v === undefined ? "—" : `${v.toFixed(0)} %`);

export function renderMarkdown(results: readonly Measurement[], meta: RunMeta): string {
  const o = meta.opts;
  const day = meta.finishedAt.toISOString().slice(0, 10);
  const lines: string[] = [];
  lines.push("# Gateway on JetStream vs gateway on Redis pub/sub: the users' workload");
  lines.push("");
  lines.push(
    `Measured ${day} (${meta.startedAt.toISOString().slice(11, 16)}–${meta.finishedAt.toISOString().slice(11, 16)} UTC) by \`npm run compare${o.scale === 1 ? "" : ` -- --scale ${o.scale}`}\`, **scale ${o.scale}** ` +
      `(clients × ${o.scale}), ${o.publishS} s of publishing per row, gateway with ${o.workers} workers, Node ${meta.node}.`,
  );
  lines.push("");
  lines.push(
    `**Machine:** ${meta.cores} cores (${meta.cpuModel}) shared by the broker (embedded nats-server or redis-server), the gateway's ${o.workers} workers, ` +
      "the subscriber processes and the publisher. The users' figures come from separate hosts for Redis, subscribers and publisher. " +
      "Latencies here therefore include waiting for a CPU; compare the two brokers with each other, and the users' column only as an order of magnitude. " +
      "The load average per row (in the details below) shows how busy the machine was: above 2 the box was oversubscribed during that row.",
  );
  lines.push("");
  lines.push(
    "Each row starts a fresh gateway (`--broker jetstream|redis`, broker embedded, per-IP limits off), connects the subscribers " +
      "(`sub-cluster -c P -n N --channel cmp.<row>.<broker>`), then publishes one message per interval through one gateway WebSocket " +
      "(`pub-cluster -t <1000/rate> -n 1 -c 1 --target gateway-ws`). Latency = receive time in the subscriber − send time in the publisher, every delivery. " +
      `A row ends when every subscriber has every end marker, after 10 s without messages, or ${o.publishS + o.drainS + 30} s after it started.`,
  );
  lines.push("");
  const maxLoad = Math.max(...results.map((m) => m.loadAvg ?? 0));
  if (maxLoad > meta.cores * 1.5) {
    lines.push(
      `**The machine was oversubscribed during this run** (1-minute load average up to ${maxLoad.toFixed(1)} on ${meta.cores} cores, see the details table). ` +
        "The run's own processes (up to 8 sub-cluster processes, the gateway's workers, the broker, the publisher) are enough for that on two cores, and other work may have added to it: " +
        "every process got only a share of a core, which shows as low CPU figures next to high latencies. Treat the absolute figures as an upper bound for this box.",
    );
    lines.push("");
  }
  lines.push(
    "| clients × msg/s | side | received | lost | MIN ms | MAX ms | MEAN ms | HARMONIC MEAN ms | p99 ms | sub-cluster CPU: all processes (busiest) | gateway CPU | broker CPU |",
  );
  lines.push("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  const keys = [...new Set(results.map((m) => `${m.row.clients}x${m.row.rate}`))];
  for (const k of keys) {
    const group = results.filter((m) => `${m.row.clients}x${m.row.rate}` === k);
    const row = group[0]!.row;
    const label = `${int(group[0]!.clients)} × ${row.rate}`;
    for (const m of group) {
      if (!m.ok) {
        lines.push(`| ${label} | ${BROKER_LABEL[m.broker]} | failed: ${m.notes.join("; ").replace(/\|/g, "/")} | | | | | | | | | |`);
        continue;
      }
      lines.push(
        `| ${label} | ${BROKER_LABEL[m.broker]} | ${int(m.received)} / ${int(m.expected)} | ${int(m.lost)} | ${ms(m.minMs)} | ${ms(m.maxMs)} | **${ms(m.meanMs)}** | ${ms(m.hmeanMs)} | **${ms(m.p99Ms)}** | ${pct(m.subCpuSum)} (${pct(m.subCpuAvgMax)}) | ${pct(m.gatewayCpuPct)} | ${pct(m.brokerCpuPct)} |`,
      );
    }
    const ref = REFERENCE[rowKey(unscaled(row, o.scale))];
    if (ref) {
      lines.push(
        `| ${int(unscaled(row, o.scale).clients)} × ${row.rate} | users' Redis pub/sub, their cluster${ref.current ? ' (live "current" window)' : ""} | ${int(ref.received)} | — | ${ms(ref.min)} | ${ms(ref.max)} | ${ms(ref.mean)} | ${ms(ref.hmean)} | — | — | — | — |`,
      );
    }
  }
  lines.push("");
  lines.push(
    "CPU is in % of one core (the machine has " +
      meta.cores * 100 +
      " %): for the subscribers, the sum of the `sub-cluster` processes' averages over the seconds in which messages flowed, " +
      "and the busiest one (a process above 90 % is a saturated generator, and its latencies include queueing in the tool); for the gateway (primary + workers) and the broker, " +
      "from the first publish to the end of the row, read from `/proc`.",
  );
  const notes = results.filter((m) => m.notes.length > 0);
  if (notes.length) {
    lines.push("");
    lines.push("Notes from the run:");
    lines.push("");
    for (const m of notes) lines.push(`- ${int(m.clients)} × ${m.row.rate} on ${m.broker}: ${m.notes.join("; ")}`);
  }
  lines.push("");
  lines.push("Details per row:");
  lines.push("");
  lines.push(
    "| clients × msg/s | broker | sub processes × clients | published (failed) | publish rate | p50 ms | dup / out-of-order | stop reason | connect s | row s | load avg |",
  );
  lines.push("|---|---|---|---:|---:|---:|---|---|---:|---:|---:|");
  for (const m of results) {
    if (!m.ok) continue;
    lines.push(
      `| ${int(m.clients)} × ${m.row.rate} | ${m.broker} | ${m.processes} × ${Math.ceil(m.clients / m.processes)} | ${int(m.published)} (${int(m.pubFailed)}) | ${m.pubRate !== undefined && Number.isFinite(m.pubRate) ? `${m.pubRate.toFixed(1)} msg/s` : "—"} | ${ms(m.p50Ms)} | ${int(m.duplicated)} / ${int(m.outOfOrder)} | ${m.stopReason} | ${m.connectS?.toFixed(1)} | ${m.wallS?.toFixed(0)} | ${m.loadAvg?.toFixed(1) ?? "—"} |`,
    );
  }
  lines.push("");
  lines.push(
    "The users' figures are quoted from their own benchmark notes (Redis pub/sub fan-out with their `sub-cluster.js`/`pub-cluster.js`, " +
      'on their cluster; they published MIN, MAX, MEAN and HARMONIC MEAN, no percentiles, and no figures for 8,000 × 100 beyond "holds steady at 250k+ messages / sec AFTER publisher stops").',
  );
  lines.push("");
  lines.push("![mean and p99 per row](compare.png)");
  lines.push("");
  return lines.join("\n");
}

/** The row of the users' workload a scaled row stands for. */
export function unscaled(row: Row, scale: number): Row {
  return { clients: Math.round(row.clients / scale / 100) * 100, rate: row.rate };
}
