// compare.png: MEAN and p99 per row, one bar per broker plus the users' reference, drawn as SVG and
// rendered to PNG by the system's Chromium (playwright-core, already a dev dependency).
import { writeFileSync } from "node:fs";
import { REFERENCE, rowKey } from "./workload.js";
import { BROKER_LABEL, unscaled, type Measurement, type RunMeta } from "./report.js";
import { launchChromium } from "#testkit/chromium.js";

const W = 1100;
const PANEL_H = 300;
const COLORS = { jetstream: "#2f6fb0", redis: "#c8553d", ref: "#7a7a7a" };

type Bar = { value: number | undefined; color: string; hollow?: boolean };
type Group = { label: string; bars: Bar[] };

const esc = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const fmtMs = (v: number): string => (v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0));

/** One panel with a log-scale y axis (latencies here span 0.1 ms to seconds). */
function panel(title: string, groups: Group[], y0: number): string {
  const left = 70;
  const right = W - 20;
  const top = y0 + 30;
  const bottom = y0 + PANEL_H - 40;
  const values = groups.flatMap((g) => g.bars.map((b) => b.value)).filter((v): v is number => v !== undefined && Number.isFinite(v) && v > 0);
  const lo = Math.pow(10, Math.floor(Math.log10(Math.min(...values, 1))));
  const hi = Math.pow(10, Math.ceil(Math.log10(Math.max(...values, 10))));
  const y = (v: number): number => bottom - ((Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * (bottom - top);
  const out: string[] = [`<text x="${left}" y="${y0 + 18}" font-size="15" font-weight="bold">${esc(title)}</text>`];
  for (let d = lo; d <= hi; d *= 10) {
    out.push(`<line x1="${left}" x2="${right}" y1="${y(d)}" y2="${y(d)}" stroke="#ddd"/>`);
    out.push(`<text x="${left - 6}" y="${y(d) + 4}" font-size="11" text-anchor="end">${d >= 1 ? d : d.toFixed(1)} ms</text>`);
  }
  const gw = (right - left) / Math.max(groups.length, 1);
  groups.forEach((g, i) => {
    const n = g.bars.length;
    const bw = Math.min(34, (gw - 20) / n);
    const x0 = left + i * gw + (gw - bw * n) / 2;
    g.bars.forEach((b, j) => {
      const x = x0 + j * bw;
      if (b.value === undefined || !Number.isFinite(b.value)) {
        out.push(`<text x="${x + bw / 2}" y="${bottom - 4}" font-size="10" text-anchor="middle" fill="#999">n/a</text>`);
        return;
      }
      const top2 = y(b.value);
      out.push(
        b.hollow
          ? `<rect x="${x + 1}" y="${top2}" width="${bw - 2}" height="${bottom - top2}" fill="none" stroke="${b.color}" stroke-width="2" stroke-dasharray="4 2"/>`
          : `<rect x="${x + 1}" y="${top2}" width="${bw - 2}" height="${bottom - top2}" fill="${b.color}"/>`,
      );
      out.push(`<text x="${x + bw / 2}" y="${top2 - 3}" font-size="10" text-anchor="middle">${fmtMs(b.value)}</text>`);
    });
    out.push(`<text x="${left + i * gw + gw / 2}" y="${bottom + 16}" font-size="11" text-anchor="middle">${esc(g.label)}</text>`);
  });
  out.push(`<line x1="${left}" x2="${right}" y1="${bottom}" y2="${bottom}" stroke="#333"/>`);
  return out.join("\n");
}

export function renderSvg(results: readonly Measurement[], meta: RunMeta): string {
  const keys = [...new Set(results.map((m) => `${m.row.clients}x${m.row.rate}`))];
  const brokers = [...new Set(results.map((m) => m.broker))];
  const pick = (k: string, b: string): Measurement | undefined => results.find((m) => `${m.row.clients}x${m.row.rate}` === k && m.broker === b && m.ok);
  const groupsFor = (metric: "meanMs" | "p99Ms"): Group[] =>
    keys.map((k) => {
      const any = results.find((m) => `${m.row.clients}x${m.row.rate}` === k)!;
      const ref = REFERENCE[rowKey(unscaled(any.row, meta.opts.scale))];
      const bars: Bar[] = brokers.map((b) => ({ value: pick(k, b)?.[metric], color: COLORS[b] }));
      bars.push(metric === "meanMs" ? { value: ref?.mean, color: COLORS.ref } : { value: ref?.max, color: COLORS.ref, hollow: true });
      const users = unscaled(any.row, meta.opts.scale).clients;
      const label =
        `${any.clients.toLocaleString("en-US")} clients × ${any.row.rate}/s` + (users !== any.clients ? ` (users: ${users.toLocaleString("en-US")})` : "");
      return { label, bars };
    });
  const legendY = 2 * PANEL_H + 40;
  const legend = [
    ...brokers.map((b) => ({ label: BROKER_LABEL[b] + " (this machine)", color: COLORS[b], hollow: false })),
    { label: "users' Redis pub/sub on their cluster (separate hosts): MEAN", color: COLORS.ref, hollow: false },
    { label: "users' Redis pub/sub on their cluster: MAX, in the p99 panel because they published no percentiles", color: COLORS.ref, hollow: true },
  ];
  const day = meta.finishedAt.toISOString().slice(0, 10);
  const H = legendY + 20 * legend.length + 30;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="DejaVu Sans, Arial, sans-serif">
<rect width="100%" height="100%" fill="#fff"/>
<text x="${W / 2}" y="22" font-size="16" text-anchor="middle" font-weight="bold">Fan-out latency: gateway on JetStream vs on Redis pub/sub (scale ${meta.opts.scale}, ${day}, ${meta.cores} shared cores)</text>
${panel("MEAN latency (log scale)", groupsFor("meanMs"), 30)}
${panel("p99 latency (log scale)", groupsFor("p99Ms"), 30 + PANEL_H)}
${legend.map((l, i) => `<rect x="70" y="${legendY + i * 20}" width="14" height="12" fill="${l.hollow ? "none" : l.color}" stroke="${l.color}" stroke-width="2"${l.hollow ? ' stroke-dasharray="4 2"' : ""}/><text x="92" y="${legendY + i * 20 + 11}" font-size="12">${esc(l.label)}</text>`).join("\n")}
</svg>`;
}

/** Writes `file` (PNG) and the SVG beside it; needs Chromium (CHROMIUM_PATH, default /usr/bin/chromium). */
export async function renderPng(results: readonly Measurement[], meta: RunMeta, file: string): Promise<void> {
  await svgToPng(renderSvg(results, meta), file);
}

/** Writes an SVG and its PNG rendering (by the system's Chromium) beside each other. */
export async function svgToPng(svg: string, file: string): Promise<void> {
  writeFileSync(file.replace(/\.png$/, ".svg"), svg);
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: W, height: 800 }, deviceScaleFactor: 1 });
    await page.setContent(`<html><body style="margin:0">${svg}</body></html>`);
    await page.locator("svg").screenshot({ path: file });
  } finally {
    await browser.close();
  }
}
