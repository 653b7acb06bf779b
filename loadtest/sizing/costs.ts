// The capacity model's costs, read from the newest bench results in loadtest/results/ (never written here):
// bench:million's JSON for memory, idle and per-delivery CPU, bench:publish's newest section for the cost of a
// publish. A figure that is missing is named with the bench that produces it.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import type { MillionResult } from "../bench/million-report.js";
import type { Costs } from "./model.js";

export type Source = { file: string; at: string; what: string };
export type CostsRead = { costs: Costs; sources: Source[] } | { missing: string[] };

/** Every bench:million result under `dir` (million.json and validation/million-*.json), newest first. */
export function millionResults(dir: string): { file: string; r: MillionResult }[] {
  const files = [join(dir, "million.json")];
  const v = join(dir, "validation");
  if (existsSync(v)) for (const f of readdirSync(v)) if (/^million-\d+\.json$/.test(f)) files.push(join(v, f));
  return files
    .filter((f) => existsSync(f))
    .map((file) => ({ file, r: JSON.parse(readFileSync(file, "utf8")) as MillionResult }))
    .filter((x) => x.r.bench === "million")
    .sort((a, b) => b.r.at.localeCompare(a.r.at));
}

/** The newest section of bench:publish's report: its date and the HTTP publish row's gateway and nats-server CPU per message. */
export function publishCosts(text: string): { at: string; gatewayUs: number; natsUs: number } | undefined {
  const sections = text.split(/^## /m).slice(1);
  for (const s of sections.reverse()) {
    const row = /^\| `POST \/v1\/publish\/\{ch\}`, 64 connections[^|]*\|([^\n]*)$/m.exec(s);
    if (!row) continue;
    const cells = row[1]!.split("|").map((c) => c.trim());
    // After the path: msgs/s, vs nats.js, gateway CPU per msg, nats-server CPU per msg, …
    const us = (c: string | undefined): number => Number(/^([\d.]+) µs$/.exec(c ?? "")?.[1] ?? NaN);
    const gatewayUs = us(cells[2]);
    const natsUs = us(cells[3]);
    if (Number.isFinite(gatewayUs) && Number.isFinite(natsUs)) return { at: s.slice(0, s.indexOf(" ")), gatewayUs, natsUs };
  }
  return undefined;
}

/** The costs from a bench:million result and bench:publish's figures. */
export function costsOf(m: MillionResult, pub: { gatewayUs: number; natsUs: number }): Costs {
  const idleCores = m.idleCpuPct / 100;
  const deliveriesPerS = m.steady.rate * m.clients;
  return {
    gatewayBytesPerConn: m.rss.perConnB,
    kernelBytesPerSocket: m.kernel.perSocketB,
    workerBytes: m.idle.workerMeanMB * 1048576,
    primaryBytes: m.idle.primaryMB * 1048576,
    usPerDelivery: (Math.max(0, m.steady.gatewayCpuPct / 100 - idleCores) * 1e6) / deliveriesPerS,
    idleCoresPerWorker: idleCores / m.workers,
    usPerPublish: pub.gatewayUs,
    natsUsPerPublish: pub.natsUs,
    // No bench isolates a stream's delivery to a consumer: at one message a second to a few dozen workers,
    // bench:million's nats-server CPU is its idle housekeeping. The cost of storing a message stands in for it
    // (an upper bound: a delivery is a copy out of the stream, with no write to disk).
    natsUsPerWorkerDelivery: pub.natsUs,
  };
}

/** A worker's CPU and the CPU per delivery, as fitted by `fitCpu`. */
export type CpuFit = { idleCoresPerWorker: number; usPerDelivery: number; runs: number };

/**
 * The gateway's CPU in the steady phases of `runs`, fitted by least squares as `workers × a + deliveries/s × b`:
 * `a` a worker's share (cores), `b` a delivery's (µs). One run cannot tell the two apart: its idle window
 * overstates what a worker costs once it is busy (on a saturated machine idle work and deliveries do not
 * add up), so the fit needs three runs or more, of two worker counts or more; undefined otherwise, or when
 * either figure comes out negative.
 */
export function fitCpu(runs: readonly MillionResult[]): CpuFit | undefined {
  const pts = runs.map((r) => ({ w: r.workers, d: r.steady.rate * r.clients, y: r.steady.gatewayCpuPct / 100 }));
  if (pts.length < 3 || new Set(pts.map((p) => p.w)).size < 2) return undefined;
  let ww = 0,
    wd = 0,
    dd = 0,
    wy = 0,
    dy = 0;
  for (const p of pts) {
    ww += p.w * p.w;
    wd += p.w * p.d;
    dd += p.d * p.d;
    wy += p.w * p.y;
    dy += p.d * p.y;
  }
  const det = ww * dd - wd * wd;
  if (det === 0) return undefined;
  const a = (wy * dd - wd * dy) / det;
  const b = (ww * dy - wd * wy) / det;
  if (!(a >= 0 && b > 0)) return undefined;
  return { idleCoresPerWorker: a, usPerDelivery: b * 1e6, runs: pts.length };
}

/**
 * Reads the costs from `dir` (loadtest/results): the newest bench:million result (`exclude`: files a validation
 * is about to measure) and the newest bench:publish section; or what is missing and which bench makes it.
 */
export function readCosts(dir: string, root: string, exclude: string[] = []): CostsRead {
  const missing: string[] = [];
  // Each run once (million.json is often a copy of a validation run), without the files about to be measured.
  const runs = millionResults(dir)
    .filter((x) => !exclude.includes(x.file))
    .filter((x, i, all) => all.findIndex((y) => y.r.at === x.r.at) === i);
  const million = runs[0];
  if (!million)
    missing.push(
      "memory per connection and per socket, idle and per-delivery CPU: `npm run bench -- million --clients 100000` writes loadtest/results/million.json",
    );
  const pubFile = join(dir, "publish.md");
  const pub = existsSync(pubFile) ? publishCosts(readFileSync(pubFile, "utf8")) : undefined;
  if (!pub) missing.push("gateway and nats-server CPU per publish: `npm run bench:publish` writes loadtest/results/publish.md");
  if (!million || !pub) return { missing };
  const cpu = fitCpu(runs.map((x) => x.r));
  return {
    costs: { ...costsOf(million.r, pub), ...(cpu ? { idleCoresPerWorker: cpu.idleCoresPerWorker, usPerDelivery: cpu.usPerDelivery } : {}) },
    sources: [
      {
        file: relative(root, million.file),
        at: million.r.at,
        what: `bench:million at ${million.r.clients.toLocaleString("en-US")} clients, ${million.r.workers} workers`,
      },
      { file: relative(root, pubFile), at: pub.at, what: "bench:publish, HTTP publish over 64 connections" },
      ...(cpu ? [{ file: relative(root, dir), at: million.r.at, what: `CPU per worker and per delivery fitted over ${cpu.runs} bench:million runs` }] : []),
    ],
  };
}
