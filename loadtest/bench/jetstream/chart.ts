// jetstream.png: the ratios beside the users', seed 000's publish rates and seed 003's time per publish, drawn
// as SVG and rendered to PNG by the system's Chromium (playwright-core), as loadtest/compare/chart.ts does.
import { REFERENCE } from "./reference.js";
import { COLUMNS, RATIOS, ourRatio, representatives, shortLabel, usersRatio, type RunMeta } from "./report.js";
import type { Path, Row } from "./rows.js";
import type { Target } from "./servers.js";
import { launchChromium } from "#testkit/chromium.js";

const W = 1400;
const PANEL_H = 330;
const USERS = "#8a8a8a";
const SERIES: Record<string, string> = {
  "cluster · nats bench": "#2f6fb0",
  "cluster · nats.js": "#e08a2c",
  "single · nats bench": "#8fb8e0",
  "single · nats.js": "#f2c48d",
  "cluster · gateway WS": "#3a9a5b",
  "single · gateway WS": "#9fd6ad",
};

type Bar = { value: number | undefined; color: string };
type Group = { label: string; bars: Bar[] };

const esc = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const fmt = (v: number): string => (v < 0.1 ? v.toFixed(3) : v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : Math.round(v).toLocaleString("en-US"));

/** A panel of grouped bars on a log-scale y axis; `mark` draws a dashed line (1 for ratios). */
function panel(title: string, unit: string, groups: Group[], y0: number, mark?: number): string {
  const left = 80;
  const right = W - 20;
  const top = y0 + 30;
  const bottom = y0 + PANEL_H - 60;
  const values = groups.flatMap((g) => g.bars.map((b) => b.value)).filter((v): v is number => v !== undefined && Number.isFinite(v) && v > 0);
  const lo = Math.pow(10, Math.floor(Math.log10(Math.min(...values, mark ?? Infinity))));
  const hi = Math.pow(10, Math.ceil(Math.log10(Math.max(...values, mark ?? 0, lo * 10))));
  const y = (v: number): number => bottom - ((Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * (bottom - top);
  const out: string[] = [`<text x="${left}" y="${y0 + 18}" font-size="15" font-weight="bold">${esc(title)}</text>`];
  for (let d = lo; d <= hi * 1.0001; d *= 10) {
    out.push(`<line x1="${left}" x2="${right}" y1="${y(d)}" y2="${y(d)}" stroke="#ddd"/>`);
    out.push(`<text x="${left - 6}" y="${y(d) + 4}" font-size="11" text-anchor="end">${fmt(d)}${unit}</text>`);
  }
  if (mark !== undefined) out.push(`<line x1="${left}" x2="${right}" y1="${y(mark)}" y2="${y(mark)}" stroke="#444" stroke-dasharray="5 3"/>`);
  const gw = (right - left) / Math.max(groups.length, 1);
  groups.forEach((g, i) => {
    const n = g.bars.length;
    const bw = Math.min(26, (gw - 12) / n);
    const x0 = left + i * gw + (gw - bw * n) / 2;
    g.bars.forEach((b, j) => {
      const x = x0 + j * bw;
      if (b.value === undefined || !Number.isFinite(b.value) || b.value <= 0) return;
      const t = y(b.value);
      out.push(`<rect x="${x + 1}" y="${t}" width="${bw - 2}" height="${Math.max(bottom - t, 1)}" fill="${b.color}"/>`);
      out.push(`<text x="${x + bw / 2}" y="${t - 3}" font-size="${bw < 20 ? 7 : 9}" text-anchor="middle">${fmt(b.value)}</text>`);
    });
    // The label in lines that fit the group's width (about 6 px a character at 10 px).
    const cx = left + i * gw + gw / 2;
    const perLine = Math.max(8, Math.floor(gw / 6));
    const lines: string[] = [];
    for (const word of g.label.split(" ")) {
      const last = lines[lines.length - 1];
      if (last !== undefined && (last + " " + word).length <= perLine) lines[lines.length - 1] = last + " " + word;
      else lines.push(word);
    }
    lines.slice(0, 3).forEach((l, k) => out.push(`<text x="${cx}" y="${bottom + 14 + 12 * k}" font-size="10" text-anchor="middle">${esc(l)}</text>`));
  });
  out.push(`<line x1="${left}" x2="${right}" y1="${bottom}" y2="${bottom}" stroke="#333"/>`);
  return out.join("\n");
}

const seriesOf = (rows: readonly Row[], seeds: readonly string[]): Array<{ target: Target; path: Path; name: string }> =>
  COLUMNS.filter((c) => rows.some((r) => r.target === c.target && r.path === c.path && seeds.includes(r.seed))).map((c) => ({
    ...c,
    name: `${c.target} · ${c.path}`,
  }));

const okRow = (rows: readonly Row[], w: string, t: Target, p: Path): Row | undefined =>
  rows.find((r) => r.workload === w && r.target === t && r.path === p && r.status === "ok");

/** The clients a run's rows went through, for the title: "nats bench v0.5.1 and nats.js", "gateway WS". */
function clientsOf(rows: readonly Row[], meta: RunMeta): string {
  const paths = [...new Set(rows.map((r) => (r.path === "nats bench" ? `nats bench ${meta.natscli}` : r.path)))];
  return paths.length > 1 ? `${paths.slice(0, -1).join(", ")} and ${paths[paths.length - 1]}` : (paths[0] ?? "no client");
}

export function renderSvg(rows: readonly Row[], meta: RunMeta): string {
  // Bars of single rows show each row's median over the rounds; ratios are medians of per-round ratios.
  const reps = representatives(rows);
  const ratioSeries = seriesOf(rows, ["000", "001", "002", "003"]);
  const ratioGroups: Array<Group & { seed: string }> = RATIOS.map((s) => ({
    seed: s.num.slice(0, 3),
    label: shortLabel(s),
    bars: [{ value: usersRatio(s), color: USERS }, ...ratioSeries.map((c) => ({ value: ourRatio(rows, s, c.target, c.path)?.med, color: SERIES[c.name]! }))],
  })).filter((g) => g.bars.slice(1).some((b) => b.value !== undefined));

  const matrixSeries = seriesOf(rows, ["000"]);
  const matrixGroups: Group[] = [...new Set(rows.filter((r) => r.seed === "000").map((r) => r.workload))].map((w) => ({
    label: (REFERENCE[w]?.config ?? w).replace(/ · /g, " "),
    bars: [
      { value: REFERENCE[w]?.value, color: USERS },
      ...matrixSeries.map((c) => ({ value: okRow(reps, w, c.target, c.path)?.value, color: SERIES[c.name]! })),
    ],
  }));

  const latSeries = seriesOf(rows, ["003"]);
  const latGroups: Group[] = [...new Set(rows.filter((r) => r.seed === "003" && r.status === "ok").map((r) => r.workload))].map((w) => ({
    label: w.replace("003.", "").replace("-", " +") + " ms",
    bars: latSeries.map((c) => ({ value: okRow(reps, w, c.target, c.path)?.value, color: SERIES[c.name]! })),
  }));

  const panels: string[] = [];
  let y0 = 40;
  const throughput = ratioGroups.filter((g) => g.seed !== "003");
  const latency = ratioGroups.filter((g) => g.seed === "003");
  if (throughput.length) {
    panels.push(
      panel("Ratios between configurations, seeds 000–002 (log scale; dashed line = 1): users' (grey) and this run's medians", "", throughput, y0, 1),
    );
    y0 += PANEL_H;
  }
  if (latency.length) {
    panels.push(panel("Ratios, seed 003: time per publish, sequential vs pipelined and +10 ms vs +0 ms (log scale)", "", latency, y0, 1));
    y0 += PANEL_H;
  }
  if (matrixGroups.length) {
    panels.push(panel("Seed 000: publish rate per publisher, msgs/s (log scale); users' on their Kubernetes cluster in grey", "", matrixGroups, y0));
    y0 += PANEL_H;
  }
  if (latGroups.length) {
    panels.push(panel("Seed 003: ms per publish with added delay (log scale; the users' unit is unknown, so theirs are not drawn)", " ms", latGroups, y0));
    y0 += PANEL_H;
  }
  const legend = [
    { name: "users' figure (other hardware)", color: USERS },
    ...seriesOf(rows, ["000", "001", "002", "003"]).map((c) => ({
      name: `${c.target === "cluster" ? "3-node cluster" : "single node"} · ${c.path} (this machine)`,
      color: SERIES[c.name]!,
    })),
  ];
  const H = y0 + 20 * legend.length + 20;
  const day = meta.finishedAt.toISOString().slice(0, 10);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="DejaVu Sans, Arial, sans-serif">
<rect width="100%" height="100%" fill="#fff"/>
<text x="${W / 2}" y="24" font-size="16" text-anchor="middle" font-weight="bold">The users' JetStream evaluation rerun with ${esc(clientsOf(rows, meta))} (${day}, ${meta.cores} shared cores, median of ${meta.rounds} round${meta.rounds > 1 ? "s" : ""}${meta.quick ? ", --quick" : ""})</text>
${panels.join("\n")}
${legend.map((l, i) => `<rect x="80" y="${y0 + i * 20}" width="14" height="12" fill="${l.color}"/><text x="102" y="${y0 + i * 20 + 11}" font-size="12">${esc(l.name)}</text>`).join("\n")}
</svg>`;
}

/** Writes `file` (PNG); needs Chromium (CHROMIUM_PATH, default /usr/bin/chromium). */
export async function renderPng(rows: readonly Row[], meta: RunMeta, file: string): Promise<void> {
  const svg = renderSvg(rows, meta);
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: W, height: 900 }, deviceScaleFactor: 1 });
    await page.setContent(`<html><body style="margin:0">${svg}</body></html>`);
    await page.locator("svg").screenshot({ path: file });
  } finally {
    await browser.close();
  }
}
