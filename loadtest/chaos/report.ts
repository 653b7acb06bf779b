// The chaos run's figures besides the checker's counts (pure): per fault kind, the time until every client the
// fault disconnected was subscribed again, and the delivery latency inside and outside fault windows.
import type { WebhookCheck, WebhookDisorder } from "./webhook.js";
import type { CheckResult, SubscriberLog } from "./checker.js";
import type { ConnEvent } from "./clients.js";
import type { FaultRecord } from "./faults.js";

export type KindStats = {
  kind: string;
  count: number;
  affectedClients: number;
  /** From the fault's start until the last client it cut was subscribed again. */
  recoverP50Ms: number | null;
  recoverMaxMs: number | null;
  /** Each cut client's own outage: from its close to its next successful subscribe. */
  outageP50Ms: number | null;
  outageMaxMs: number | null;
  notRecovered: number;
};
export type LatencyStats = { samples: number; p50: number | null; p99: number | null; max: number | null };

const pct = (sorted: number[], p: number): number | null =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]! : null;

/**
 * Recovery of one fault: the clients that went down between its start and its end (+ a short grace for
 * closes noticed late), and for each the first `up` after its last `down` in that window. The fault's recovery
 * time is the latest of those, from the fault's start; a client never up again counts as not recovered.
 */
export function recovery(
  f: FaultRecord,
  events: ConnEvent[],
  graceMs = 2_000,
): { affected: number; ms: number | null; notRecovered: number; outages: number[] } {
  const lastDown = new Map<string, number>();
  const outages: number[] = [];
  for (const e of events) {
    if (e.up || e.t < f.startedAt || e.t > f.endedAt + graceMs) continue;
    lastDown.set(e.client, Math.max(lastDown.get(e.client) ?? 0, e.t));
    const up = events.find((u) => u.up && u.client === e.client && u.t >= e.t);
    if (up) outages.push(up.t - e.t);
  }
  let worst: number | null = null;
  let notRecovered = 0;
  for (const [client, down] of lastDown) {
    const up = events.find((e) => e.up && e.client === client && e.t >= down);
    if (!up) notRecovered++;
    else worst = Math.max(worst ?? 0, up.t - f.startedAt);
  }
  return { affected: lastDown.size, ms: worst, notRecovered, outages };
}

export function kindStats(faults: FaultRecord[], events: ConnEvent[]): KindStats[] {
  const kinds = [...new Set(faults.map((f) => f.kind))];
  return kinds.map((kind) => {
    const rs = faults.filter((f) => f.kind === kind).map((f) => recovery(f, events));
    const times = rs
      .map((r) => r.ms)
      .filter((x): x is number => x !== null)
      .sort((a, b) => a - b);
    const outages = rs.flatMap((r) => r.outages).sort((a, b) => a - b);
    return {
      kind,
      count: rs.length,
      affectedClients: rs.reduce((a, r) => a + r.affected, 0),
      recoverP50Ms: pct(times, 50),
      recoverMaxMs: times.at(-1) ?? null,
      outageP50Ms: pct(outages, 50),
      outageMaxMs: outages.at(-1) ?? null,
      notRecovered: rs.reduce((a, r) => a + r.notRecovered, 0),
    };
  });
}

/** Delivery latency (publish to receipt, one host's clock) of first deliveries, split by fault windows. */
export function latency(
  subs: SubscriberLog[],
  faults: FaultRecord[],
): { duringFaults: LatencyStats; outside: LatencyStats; maxByClient: Record<string, number> } {
  const during: number[] = [];
  const outside: number[] = [];
  // The longest wait of one client for a message (first deliveries): a stalled subscription shows here.
  const maxByClient: Record<string, number> = {};
  const inFault = (t: number) => faults.some((f) => t >= f.startedAt && t <= f.endedAt + 2_000);
  for (const s of subs) {
    for (const r of s.receipts) {
      if (r.latencyMs === undefined || r.redelivered) continue;
      (inFault(r.t) ? during : outside).push(r.latencyMs);
      maxByClient[s.client] = Math.max(maxByClient[s.client] ?? 0, r.latencyMs);
    }
  }
  const stats = (xs: number[]): LatencyStats => {
    xs.sort((a, b) => a - b);
    return { samples: xs.length, p50: pct(xs, 50), p99: pct(xs, 99), max: xs.at(-1) ?? null };
  };
  return { duringFaults: stats(during), outside: stats(outside), maxByClient };
}

const ms = (x: number | null) => (x === null ? "–" : `${Math.round(x).toLocaleString("en-US")}`);

export function table(rows: string[][]): string {
  const [head, ...body] = rows;
  return [`| ${head!.join(" | ")} |`, `|${head!.map(() => "---").join("|")}|`, ...body.map((r) => `| ${r.join(" | ")} |`)].join("\n");
}

export function readable(o: {
  check: CheckResult;
  webhook: WebhookCheck;
  webhookDisorder: WebhookDisorder[];
  kinds: KindStats[];
  lat: ReturnType<typeof latency>;
  faults: FaultRecord[];
  t0: number;
}): string {
  const c = o.check;
  const counts = table([
    ["check", "count"],
    ...(["lost", "duplicated", "outOfOrder", "mismatched", "durableLost", "durableDuplicated", "ackedMissing", "storedTwice"] as const).map((k) => [
      k,
      String(c[k]),
    ]),
    ["webhook events lost", String(o.webhook.lost)],
    ["webhook events out of order (per channel)", String(o.webhook.outOfOrder)],
    ["(info) messages expected / received", `${c.expected} / ${c.received}`],
    [
      "(info) webhook events stored / accepted / accepted again; sending instances",
      `${o.webhook.expected} / ${o.webhook.received} / ${o.webhook.repeats}; ${o.webhook.senders}`,
    ],
    [
      "(info) webhook ids past the stream's end (first arrived at s) / ids given to two events",
      `${o.webhook.pastEnd}${o.webhook.pastEndFirstAt ? ` (${((o.webhook.pastEndFirstAt - o.t0) / 1000).toFixed(1)})` : ""} / ${o.webhook.reused}`,
    ],
    ["(info) redelivered (flagged)", String(c.redelivered)],
    ["(info) durable unacked at the end", String(c.durableUnacked)],
    ["(info) publishes acked / failed / failed but stored", `${c.published.acked} / ${c.published.failed} / ${c.published.failedButStored}`],
  ]);
  const kinds = table([
    ["fault", "count", "clients cut", "all back p50 ms", "all back max ms", "one client's outage p50 ms", "outage max ms", "not back"],
    ...o.kinds.map((k) => [
      k.kind,
      String(k.count),
      String(k.affectedClients),
      ms(k.recoverP50Ms),
      ms(k.recoverMaxMs),
      ms(k.outageP50Ms),
      ms(k.outageMaxMs),
      String(k.notRecovered),
    ]),
  ]);
  const lat = table([
    ["delivery latency", "samples", "p50 ms", "p99 ms", "max ms"],
    ["during faults", String(o.lat.duringFaults.samples), ms(o.lat.duringFaults.p50), ms(o.lat.duringFaults.p99), ms(o.lat.duringFaults.max)],
    ["outside faults", String(o.lat.outside.samples), ms(o.lat.outside.p50), ms(o.lat.outside.p99), ms(o.lat.outside.max)],
  ]);
  const clients = table([
    ["client", "kind", "pattern", "expected", "received", "lost", "dup", "order", "longest wait ms"],
    ...c.perClient.map((p) => [
      p.client,
      p.kind,
      `\`${p.pattern}\``,
      String(p.expected),
      String(p.received),
      String(p.lost),
      String(p.duplicated),
      String(p.outOfOrder),
      ms(o.lat.maxByClient[p.client] ?? null),
    ]),
  ]);
  const faults = table([
    ["#", "at s", "took s", "fault", "target"],
    ...o.faults.map((f) => [String(f.index), ((f.startedAt - o.t0) / 1000).toFixed(1), ((f.endedAt - f.startedAt) / 1000).toFixed(1), f.kind, f.target]),
  ]);
  const violations = c.violations.length
    ? table([
        ["client", "what", "channel", "seq", "detail"],
        ...c.violations.map((v) => [v.client, v.what, v.channel ?? "", String(v.seq ?? ""), v.detail ?? ""]),
      ])
    : "none";
  const disorder = o.webhookDisorder.length
    ? [
        table([
          ["id", "channel", "type", "sender", "arrived s", "after id", "its sender", "it arrived s", "faults then"],
          ...o.webhookDisorder.map((d) => [
            String(d.id),
            d.channel,
            d.type,
            d.sender,
            d.atS.toFixed(1),
            String(d.after.id),
            d.after.sender,
            d.after.atS.toFixed(1),
            d.faults.join("; ") || "none",
          ]),
        ]),
        ...o.webhookDisorder.map((d) => `Event ${d.id}: the gateways' webhook log lines then\n\n\`\`\`\n${d.logs.join("\n") || "(none)"}\n\`\`\``),
      ].join("\n\n")
    : "none";
  return [
    `### Checker\n\n${counts}`,
    `### Faults by kind\n\n${kinds}`,
    `### Delivery latency\n\n${lat}`,
    `### Clients\n\n${clients}`,
    `### Violations (first ${c.violations.length})\n\n${violations}`,
    `### Webhook events out of order (first ${o.webhookDisorder.length})\n\n${disorder}`,
    `### Fault log\n\n${faults}`,
  ].join("\n\n");
}
