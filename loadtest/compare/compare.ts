// npm run bench -- compare (alias npm run compare): the users' Redis pub/sub workload against the gateway on JetStream and on Redis, in one
// run on this machine, with the real sub-cluster / pub-cluster tools. Writes loadtest/results/compare.md/.json/.png
// (--out DIR elsewhere; a --quick run writes none unless --out is given).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { LatencyStats } from "../../subtools/src/shared/mod.js";
import type { SubResult } from "../../subtools/src/result.js";
import { bounded, cpuMeter, PUB_CLI, runNode, startGateway, SUB_CLI, type Gateway } from "./proc.js";
import { BENCH, compareOptions, rowKey, subProcesses, type Broker, type CompareOptions, type Row } from "./workload.js";
import { renderMarkdown, type Measurement, type RunMeta } from "./report.js";
import { renderPng } from "./chart.js";
import { FlagError } from "../kit/flags.js";
import { runBench } from "../kit/main.js";
import { reportPath } from "../kit/results.js";

const log = (s: string): void => console.log(`[compare] ${s}`);

type PubJson = { counts: { sent: number; acked: number; failed: number }; ratePerS: number; cpu: { name: string; avgPct: number; peakPct: number }[] };

/** One row on one broker: fresh gateway, subscribers connected, one publisher for `publishS`, drain, stop. */
async function measure(opts: CompareOptions, row: Row, broker: Broker, work: string): Promise<Measurement> {
  const procs = subProcesses(row.clients);
  const perProc = Math.ceil(row.clients / procs);
  const clients = procs * perProc;
  const passes = Math.max(1, Math.round(row.rate * opts.publishS));
  const intervalMs = Math.max(1, Math.round(1000 / row.rate));
  const channel = `cmp.${rowKey(row)}.${broker}`;
  const base: Measurement = { row, broker, clients, processes: procs, passes, intervalMs, ok: false, notes: [] };
  const started = Date.now();
  let gw: Gateway;
  try {
    gw = await startGateway(broker, opts.workers, join(work, `nats-${rowKey(row)}`));
  } catch (e) {
    base.notes.push(`gateway did not start: ${(e as Error).message.split("\n")[0]!.slice(0, 300)}`);
    return base;
  }
  try {
    const subJson = join(work, `sub-${rowKey(row)}-${broker}.json`);
    const pubJson = join(work, `pub-${rowKey(row)}-${broker}.json`);
    const hardS = opts.publishS + opts.drainS;
    const sub = runNode([
      SUB_CLI,
      "-c",
      String(procs),
      "-n",
      String(perProc),
      "-p",
      String(gw.port),
      "--channel",
      channel,
      "-d",
      String(hardS + 30),
      "--idle",
      "10",
      "--json",
      subJson,
    ]);
    const connectS = Math.max(30, Math.ceil(clients / 200));
    const connectDeadline = Date.now() + connectS * 1000;
    while (!sub.out().includes(`clients ${clients}/${clients} `)) {
      if (sub.child.exitCode !== null) throw new Error(`sub-cluster exited ${sub.child.exitCode}: ${sub.out().slice(-1500)}`);
      if (Date.now() > connectDeadline) {
        base.notes.push(`not all ${clients} clients connected within ${connectS} s`);
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    base.connectS = (Date.now() - started) / 1000;
    const cpu = cpuMeter(gw.child.pid!);
    cpu.start();
    const pub = runNode([
      PUB_CLI,
      "-t",
      String(intervalMs),
      "-n",
      "1",
      "-c",
      "1",
      "-p",
      String(passes),
      "--target",
      "gateway-ws",
      "--port",
      String(gw.port),
      "--channel",
      channel,
      "--json",
      pubJson,
    ]);
    const pubEnd = await bounded(pub, (opts.publishS * 2 + 30) * 1000);
    if (pubEnd.cut) base.notes.push("publisher cut at its time limit");
    const subEnd = await bounded(sub, (opts.drainS + 40) * 1000);
    const split = cpu.end();
    if (subEnd.cut) base.notes.push("subscribers cut at their time limit");
    const r = JSON.parse(readFileSync(subJson, "utf8")) as SubResult;
    // A publisher cut at its limit writes no result; the subscribers' figures still stand.
    const p: PubJson = existsSync(pubJson)
      ? (JSON.parse(readFileSync(pubJson, "utf8")) as PubJson)
      : { counts: { sent: NaN, acked: NaN, failed: NaN }, ratePerS: NaN, cpu: [] };
    const lat = LatencyStats.fromJSON(r.latency);
    const saturated = /WARNING: load generator saturated/.test(sub.out());
    if (saturated) base.notes.push("a subscriber process was saturated (>90 % of a core) while receiving");
    return {
      ...base,
      ok: true,
      received: r.counts.received,
      expected: r.counts.expected,
      lost: r.counts.lost,
      duplicated: r.counts.duplicated,
      outOfOrder: r.counts.outOfOrder,
      connected: r.counts.everConnected,
      stopReason: r.stopReason,
      minMs: lat.count ? lat.min / 1000 : NaN,
      maxMs: lat.count ? lat.max / 1000 : NaN,
      meanMs: lat.meanUs / 1000,
      hmeanMs: lat.harmonicMeanUs / 1000,
      p50Ms: lat.count ? lat.percentileUs(50) / 1000 : NaN,
      p99Ms: lat.count ? lat.percentileUs(99) / 1000 : NaN,
      published: p.counts.sent,
      pubFailed: p.counts.failed,
      pubRate: p.ratePerS,
      subCpuAvgMax: Math.max(...r.cpu.filter((c) => c.name !== "master").map((c) => c.avgPct), 0),
      subCpuPeak: Math.max(...r.cpu.map((c) => c.peakPct), 0),
      subCpuSum: r.cpu.filter((c) => c.name !== "master").reduce((a, c) => a + c.avgPct, 0),
      pubCpuAvg: Math.max(...p.cpu.map((c) => c.avgPct), 0),
      gatewayCpuPct: split.gatewayPct,
      brokerCpuPct: split.brokerPct,
      wallS: (Date.now() - started) / 1000,
      loadAvg: loadavg()[0],
    };
  } catch (e) {
    base.notes.push((e as Error).message.split("\n")[0]!.slice(0, 300));
    return base;
  } finally {
    await gw.stop(15_000);
  }
}

runBench(BENCH, async ({ flags }) => {
  const opts = compareOptions(flags, reportPath(flags, "."));
  if (flags.render) {
    if (!opts.outDir) throw new FlagError("--render writes a report: give --out DIR with --quick, and leave out --no-write");
    return rerender(flags.render, opts.outDir);
  }
  const work = mkdtempSync(join(tmpdir(), "fgw-compare-"));
  const startedAt = new Date();
  log(
    `scale ${opts.scale}, ${opts.publishS} s of publishing per row, rows ${opts.rows.map(rowKey).join(" ")}, brokers ${opts.brokers.join(" ")}, gateway workers ${opts.workers}, ${cpus().length} cores`,
  );
  const results: Measurement[] = [];
  const sigint = (): void => {
    log("interrupted: writing what was measured");
    void finish().then(() => process.exit(130));
  };
  const finish = async (): Promise<void> => {
    if (!opts.outDir) return log("no report written (--no-write, or --quick without --out)");
    const outDir = opts.outDir;
    mkdirSync(outDir, { recursive: true });
    const meta = { startedAt, finishedAt: new Date(), opts, cores: cpus().length, cpuModel: cpus()[0]?.model ?? "?", node: process.version };
    const md = renderMarkdown(results, meta);
    writeFileSync(join(outDir, "compare.md"), md);
    writeFileSync(join(outDir, "compare.json"), JSON.stringify({ ...meta, results }, null, 2) + "\n");
    try {
      await renderPng(results, meta, join(outDir, "compare.png"));
    } catch (e) {
      log(`PNG not written: ${(e as Error).message}`);
    }
    log(`wrote ${join(outDir, "compare.md")}, compare.json and compare.png`);
  };
  process.once("SIGINT", sigint);
  try {
    for (const row of opts.rows) {
      for (const broker of opts.brokers) {
        log(`${row.clients} clients at ${row.rate} msg/s on ${broker} …`);
        const m = await measure(opts, row, broker, work);
        results.push(m);
        log(
          m.ok
            ? `  received ${m.received}/${m.expected} lost ${m.lost} | MEAN ${m.meanMs!.toFixed(2)} ms HMEAN ${m.hmeanMs!.toFixed(2)} ms p99 ${m.p99Ms!.toFixed(2)} ms MAX ${m.maxMs!.toFixed(2)} ms | sub cpu ${m.subCpuAvgMax!.toFixed(0)}% gateway ${m.gatewayCpuPct!.toFixed(0)}% broker ${m.brokerCpuPct!.toFixed(0)}% | ${m.wallS!.toFixed(0)} s${m.notes.length ? " | " + m.notes.join("; ") : ""}`
            : `  failed: ${m.notes.join("; ")}`,
        );
      }
    }
  } finally {
    process.off("SIGINT", sigint);
    await finish();
    rmSync(work, { recursive: true, force: true });
  }
});

/** Writes compare.md/.png again from a compare.json (e.g. after a report change), without measuring. */
async function rerender(file: string, outDir: string): Promise<void> {
  mkdirSync(outDir, { recursive: true });
  const saved = JSON.parse(readFileSync(file, "utf8")) as RunMeta & { results: Measurement[] };
  const meta: RunMeta = { ...saved, startedAt: new Date(saved.startedAt), finishedAt: new Date(saved.finishedAt) };
  writeFileSync(join(outDir, "compare.md"), renderMarkdown(saved.results, meta));
  await renderPng(saved.results, meta, join(outDir, "compare.png"));
  log(`rendered ${join(outDir, "compare.md")} and compare.png from ${file}`);
}
