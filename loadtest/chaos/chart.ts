// The chaos run's chart (pure): delivery latency over time — p50 and p99 of first deliveries per second, on a
// log scale — with every fault's window shaded and labelled by kind. SVG, written beside the report.
import type { SubscriberLog } from "./checker.js";
import type { FaultRecord } from "./faults.js";

const W = 1200;
const H = 420;
const PAD = { l: 64, r: 180, t: 36, b: 44 };
const COLORS: Record<string, string> = {
  "worker-kill": "#e6194b",
  "primary-kill": "#f58231",
  "rolling-restart": "#911eb4",
  "nats-kill": "#4363d8",
  "nats-pause": "#42d4f4",
  "link-stall": "#3cb44b",
  "link-delay": "#bfef45",
  "client-burst": "#f032e6",
  "client-stall": "#a9a9a9",
  "region-kill": "#000075",
  "region-cut": "#9a6324",
  "region-delay": "#ffe119",
  "region-move": "#dcbeff",
  "region-split": "#800000",
};

export type LatencyPoint = { t: number; p50: number; p99: number; n: number };

/** Per-second p50/p99 of first deliveries (ms after `t0`, bucketed by receipt time). */
export function latencySeries(subscribers: readonly SubscriberLog[], t0: number, bucketMs = 1_000): LatencyPoint[] {
  const buckets = new Map<number, number[]>();
  for (const s of subscribers)
    for (const r of s.receipts) {
      if (r.latencyMs === undefined || r.redelivered || r.t < t0) continue;
      const b = Math.floor((r.t - t0) / bucketMs);
      let list = buckets.get(b);
      if (!list) buckets.set(b, (list = []));
      list.push(r.latencyMs);
    }
  const pick = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
  return [...buckets.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([b, list]) => {
      list.sort((x, y) => x - y);
      return { t: b * bucketMs, p50: pick(list, 0.5), p99: pick(list, 0.99), n: list.length };
    });
}

/** The SVG: x = seconds into the run, y = latency (log10, 1 ms to the largest p99), faults as bands. */
export function renderLatencyChart(series: readonly LatencyPoint[], faults: readonly FaultRecord[], t0: number, title: string): string {
  const endMs = Math.max(series.at(-1)?.t ?? 0, ...faults.map((f) => f.endedAt - t0), 1_000);
  const top = Math.max(10, ...series.map((p) => p.p99));
  const x = (ms: number) => PAD.l + (Math.max(0, ms) / endMs) * (W - PAD.l - PAD.r);
  const y = (v: number) => H - PAD.b - (Math.log10(Math.max(1, v)) / Math.log10(top)) * (H - PAD.t - PAD.b);
  const bands = faults
    .map((f) => {
      const x0 = x(f.startedAt - t0);
      const w = Math.max(1, x(f.endedAt - t0) - x0);
      return `<rect class="fault" data-kind="${f.kind}" x="${x0.toFixed(1)}" y="${PAD.t}" width="${w.toFixed(1)}" height="${H - PAD.t - PAD.b}" fill="${COLORS[f.kind] ?? "#888"}" fill-opacity="0.18"/>`;
    })
    .join("\n");
  const line = (key: "p50" | "p99", color: string) =>
    `<polyline class="${key}" fill="none" stroke="${color}" stroke-width="1.2" points="${series.map((p) => `${x(p.t).toFixed(1)},${y(p[key]).toFixed(1)}`).join(" ")}"/>`;
  const yTicks: string[] = [];
  for (let v = 1; v <= top * 1.0001; v *= 10)
    yTicks.push(
      `<text x="${PAD.l - 6}" y="${y(v) + 4}" text-anchor="end">${v >= 1000 ? `${v / 1000} s` : `${v} ms`}</text><line x1="${PAD.l}" x2="${W - PAD.r}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`,
    );
  const step = Math.max(10, Math.ceil(endMs / 1000 / 12 / 10) * 10);
  const xTicks: string[] = [];
  for (let s = 0; s * 1000 <= endMs; s += step) xTicks.push(`<text x="${x(s * 1000)}" y="${H - PAD.b + 16}" text-anchor="middle">${s} s</text>`);
  const kinds = [...new Set(faults.map((f) => f.kind))];
  const legend = [
    `<line x1="${W - PAD.r + 14}" x2="${W - PAD.r + 34}" y1="${PAD.t + 6}" y2="${PAD.t + 6}" stroke="#1f77b4" stroke-width="2"/><text x="${W - PAD.r + 40}" y="${PAD.t + 10}">p50</text>`,
    `<line x1="${W - PAD.r + 14}" x2="${W - PAD.r + 34}" y1="${PAD.t + 24}" y2="${PAD.t + 24}" stroke="#d62728" stroke-width="2"/><text x="${W - PAD.r + 40}" y="${PAD.t + 28}">p99</text>`,
    ...kinds.map(
      (k, i) =>
        `<rect x="${W - PAD.r + 14}" y="${PAD.t + 40 + i * 18}" width="20" height="12" fill="${COLORS[k] ?? "#888"}" fill-opacity="0.35"/><text x="${W - PAD.r + 40}" y="${PAD.t + 50 + i * 18}">${k}</text>`,
    ),
  ];
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="DejaVu Sans, Arial, sans-serif" font-size="11">
<rect width="${W}" height="${H}" fill="#fff"/>
<text x="${PAD.l}" y="20" font-size="14">${title}</text>
${yTicks.join("\n")}
${bands}
${line("p50", "#1f77b4")}
${line("p99", "#d62728")}
${xTicks.join("\n")}
${legend.join("\n")}
</svg>
`;
}
