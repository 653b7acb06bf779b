// The gateway's own stage metrics read from its /metrics after a row (issue 47: where delivery latency goes):
// each stage histogram's p50 and p99, estimated from its buckets as Prometheus' histogram_quantile does
// (linear within the bucket), over every worker (the cluster's /metrics sums them).

/** The stages, by histogram: publish → stored, stored → hub, hub → socket write, and messages per turn. */
export const STAGES = {
  publishToStored: "fanout_publish_duration_seconds",
  storedToHub: "fanout_delivery_latency_seconds",
  hubToWrite: "fanout_live_turn_seconds",
  messagesPerTurn: "fanout_live_turn_messages",
} as const;

export type StageSummary = Partial<Record<keyof typeof STAGES, { p50: number; p99: number; count: number }>> & { eventLoopLagP99Ms?: number };

/** A histogram's cumulative buckets (upper bound, count), from Prometheus text; label sets other than `le` are summed. */
export function histogramBuckets(text: string, name: string): [number, number][] {
  const sums = new Map<number, number>();
  const re = new RegExp(`^${name}_bucket\\{(?:[^}]*,)?le="([^"]+)"[^}]*\\} (\\S+)$`, "gm");
  for (const m of text.matchAll(re)) {
    const le = m[1] === "+Inf" ? Infinity : Number(m[1]);
    sums.set(le, (sums.get(le) ?? 0) + Number(m[2]));
  }
  return [...sums.entries()].sort((a, b) => a[0] - b[0]);
}

/** The q-quantile (0–1) of cumulative buckets, linear within its bucket; the last finite bound when it falls in +Inf. */
export function bucketQuantile(buckets: readonly [number, number][], q: number): number {
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total === 0) return NaN;
  const rank = q * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const [le, count] of buckets) {
    if (count >= rank) {
      if (le === Infinity) return prevLe;
      return prevLe + ((le - prevLe) * (rank - prevCount)) / Math.max(1, count - prevCount);
    }
    prevLe = le;
    prevCount = count;
  }
  return prevLe;
}

/** Every stage's p50/p99 (seconds, or messages for messagesPerTurn) and the event loop's p99 lag (max over workers). */
export function summarizeStages(text: string): StageSummary {
  const out: StageSummary = {};
  for (const [key, name] of Object.entries(STAGES) as [keyof typeof STAGES, string][]) {
    const b = histogramBuckets(text, name);
    const count = b.at(-1)?.[1] ?? 0;
    if (count > 0) out[key] = { p50: bucketQuantile(b, 0.5), p99: bucketQuantile(b, 0.99), count };
  }
  const lags = [...text.matchAll(/^nodejs_eventloop_lag_p99_seconds(?:\{[^}]*\})? (\S+)$/gm)].map((m) => Number(m[1]));
  if (lags.length > 0) out.eventLoopLagP99Ms = Math.max(...lags) * 1000;
  return out;
}

/** One line for the log. */
export function stagesLine(s: StageSummary): string {
  const ms = (k: keyof typeof STAGES) => (s[k] ? `${(s[k].p50 * 1000).toFixed(1)} / ${(s[k].p99 * 1000).toFixed(1)} ms` : "—");
  const per = s.messagesPerTurn ? `${s.messagesPerTurn.p50.toFixed(1)} / ${s.messagesPerTurn.p99.toFixed(1)}` : "—";
  return `stages p50 / p99: publish → stored ${ms("publishToStored")}, stored → hub ${ms("storedToHub")}, hub → socket write ${ms("hubToWrite")}, messages per turn ${per}, event-loop lag p99 ${s.eventLoopLagP99Ms?.toFixed(1) ?? "—"} ms`;
}
