// The soak report: the verdict and its reasons, one table row per series (slope per hour with its 95%
// interval, fitted growth against the threshold, the largest value against the bound, a sparkline of the run).
import type { ChurnCounts } from "./churn.js";
import { fmt, MATERIALITY, type Verdict } from "./verdict.js";

const BARS = "▁▂▃▄▅▆▇█";

/** The values drawn in `width` cells (each the mean of its share of the samples), scaled min..max. */
export function sparkline(values: readonly number[], width = 24): string {
  if (values.length === 0) return "";
  const cells: number[] = [];
  const per = Math.max(1, values.length / width);
  for (let i = 0; i < values.length; i += per) {
    const part = values.slice(Math.floor(i), Math.max(Math.floor(i) + 1, Math.floor(i + per)));
    cells.push(part.reduce((a, b) => a + b, 0) / part.length);
  }
  const lo = Math.min(...cells);
  const hi = Math.max(...cells);
  return cells.map((v) => BARS[hi === lo ? 0 : Math.round(((v - lo) / (hi - lo)) * (BARS.length - 1))]).join("");
}

export type ReportInput = {
  verdict: Verdict;
  command: string;
  startedAt: string;
  minutes: number;
  warmupS: number;
  intervalS: number;
  samples: number;
  counts: ChurnCounts;
  setup: string;
};

export function markdown(r: ReportInput): string {
  const v = r.verdict;
  const rows = v.series.map((s) => {
    const f = s.trend.fit;
    const slope = f ? `${fmt(f.slopePerHour)} [${fmt(f.ciLowPerHour)}, ${fmt(f.ciHighPerHour)}]` : "–";
    const growth = f ? `${f.growth >= 0 ? "+" : ""}${fmt(f.growth)} / ${fmt(s.trend.threshold)}` : "–";
    const state = s.overBound
      ? "**over bound**"
      : !s.judged
        ? s.bound !== undefined
          ? "cache: bound only"
          : "not judged"
        : s.trend.grows
          ? "**grows**"
          : s.trend.significant
            ? "rising, immaterial"
            : "flat";
    const bound = s.bound === undefined ? "" : `${fmt(s.maxSeen)} / ${fmt(s.bound)}`;
    return `| ${s.name} | ${f ? fmt(f.mean) : "–"} | ${slope} | ${growth} | ${bound} | ${sparkline(s.values)} | ${state} |`;
  });
  const c = r.counts;
  const errors = Object.entries(c.errors)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${n}`)
    .join(", ");
  const floors = Object.entries(MATERIALITY)
    .map(([k, m]) => `\`${k}\` max(${fmt(m.abs)}, ${Math.round(m.rel * 100)}%)`)
    .join(", ");
  return `# Soak run

\`${r.command}\` — started ${r.startedAt}, ${r.minutes} min of churn, a sample every ${r.intervalS} s (${r.samples} samples), the first ${Math.round(r.warmupS)} s are warm-up and not fitted.

**${v.ok ? "PASS: no series grows and no table passed its bound." : "FAIL"}**
${v.failures.map((f) => `- ${f}`).join("\n")}

${r.setup}

## Workload

${c.wsSessions} WebSocket sessions (${c.wsDropped} ended by dropping the TCP connection), ${c.subOk} subscriptions accepted (${c.resumes} resumes from {seq,epoch}, ${c.durableBinds} durable binds, ${c.presenceJoins} presence joins), ${c.sseStreams} SSE streams; ${c.publishedWs} publishes over WebSocket and ${c.publishedHttp} over HTTP; ${c.received} messages received, ${c.acks} acks and ${c.naks} naks; ${c.historyReads} history reads and ${c.presenceReads} presence reads.
Refusals and failures: ${errors || "none"}.

## Series

Slope: least-squares line through the samples after warm-up, per hour, with its 95% confidence interval. Growth: what the line rises over the measured window, against the threshold for that figure. A series **grows** (and fails the run) when the interval lies above zero *and* the growth reaches the threshold; "rising, immaterial" is a significant slope below it. Tables: largest value seen / bound.

| series | mean | slope per hour [95% CI] | growth / threshold | max / bound | run | verdict |
|---|---|---|---|---|---|---|
${rows.join("\n")}

Thresholds (growth over the window must reach both the absolute and the relative floor of the fitted start): ${floors}.
`;
}
