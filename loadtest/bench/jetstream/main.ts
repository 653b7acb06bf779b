// bench:jetstream — the users' JetStream evaluation (seeds 000–003) rerun on this machine with nats bench
// (natscli v0.5.1) and with this project's own path (nats.js, pub-cluster, the gateway's HTTP publish), on a
// local single node and a local 3-node cluster. Prints nats-bench-style lines and writes
// loadtest/results/jetstream.{md,json,png} with the users' figures beside ours.
// Usage: node dist/loadtest/bench/jetstream/main.js [--quick] [--target single|cluster|both] [--only …] [--out DIR]
import { execFileSync } from "node:child_process";
import { cpus, loadavg } from "node:os";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { ROOT } from "../common.js";
import { NATS_SERVER_BIN } from "#testkit/nats-server.js";
import { BENCH, parseOptions, type Options } from "./options.js";
import { runBench } from "../../kit/main.js";
import { startServers, type Target } from "./servers.js";
import { NATSCLI_VERSION, requireNatsCli } from "./natscli.js";
import type { Context } from "./context.js";
import { cpuWindow } from "./cpu.js";
import type { Row } from "./rows.js";
import { runMatrix } from "./matrix.js";
import { runGatewayLayouts } from "./gateway-leg.js";
import { runPushGroup } from "./push-group.js";
import { runClusterSeed } from "./cluster-seed.js";
import { runLatency } from "./latency.js";
import { runPaths } from "./paths.js";
import { runEncryption } from "./encryption.js";
import { renderMarkdown, type RunMeta } from "./report.js";
import { renderPng } from "./chart.js";

async function runTarget(target: Target, opts: Options, rows: Row[], log: (l: string) => void): Promise<void> {
  log(`\n=== ${target === "single" ? "single nats-server" : "3-node cluster"} ===`);
  const servers = await startServers(target);
  let round = 0;
  // The servers' CPU from one row's end to the next's: that row's work plus its streams' set-up.
  const serverCpu = cpuWindow(servers.pids);
  const ctx: Context = {
    servers,
    opts,
    log,
    add: (r) => {
      r.round = round;
      r.serverCpuPct = serverCpu.read();
      rows.push(r);
      const head = `[${r.seed}] ${r.workload} · ${r.target} · ${r.path}`;
      if (r.status !== "ok") log(`${head}: ${r.status.toUpperCase()}${r.note ? ` — ${r.note}` : ""}`);
      else {
        log(`${head}: ${r.metric} ${fmtNum(r.value!)}`);
        for (const l of r.lines) log(`    ${l}`);
      }
    },
  };
  try {
    for (round = 1; round <= opts.rounds; round++) {
      if (opts.rounds > 1) log(`\n--- ${target}: round ${round} of ${opts.rounds} ---`);
      serverCpu.read();
      if (opts.groups.has("000")) await runMatrix(ctx);
      if (opts.groups.has("000-gateway")) await runGatewayLayouts(ctx, round);
      if (opts.groups.has("001")) await runPushGroup(ctx);
      if (opts.groups.has("002")) await runClusterSeed(ctx);
      if (opts.groups.has("paths")) await runPaths(ctx);
    }
  } finally {
    await servers.stop();
  }
}

/** Writes the report and chart again from a run's JSON (after a change to report.ts or chart.ts). */
async function rerender(file: string, opts: Options): Promise<number> {
  const saved = JSON.parse(readFileSync(file, "utf8")) as { meta: RunMeta & { startedAt: string; finishedAt: string }; rows: Row[] };
  const meta: RunMeta = { ...saved.meta, startedAt: new Date(saved.meta.startedAt), finishedAt: new Date(saved.meta.finishedAt) };
  const dir = opts.outDir ?? dirname(file);
  writeFileSync(join(dir, `${opts.name}.md`), renderMarkdown(saved.rows, meta, `${opts.name}.png`));
  if (opts.chart) await renderPng(saved.rows, meta, join(dir, `${opts.name}.png`));
  console.log(`wrote ${dir}/${opts.name}.{md${opts.chart ? ",png" : ""}} from ${file}`);
  return 0;
}

const fmtNum = (n: number): string => (Math.abs(n) >= 100 ? Math.round(n).toLocaleString("en-US") : n.toPrecision(3));

runBench(BENCH, async ({ argv }) => {
  const opts = parseOptions(argv);
  if (opts.render) return rerender(opts.render, opts);
  requireNatsCli();
  // The test kit resolves the cluster's config file from the working directory.
  process.chdir(ROOT);
  const rows: Row[] = [];
  const t0 = performance.now();
  // Elapsed seconds on the section lines, so a slow part of a run shows.
  const log = (l: string): void => console.log(/^\[\d{3}|^\[paths|^\[enc/.test(l) ? `${((performance.now() - t0) / 1000).toFixed(1).padStart(6)}s ${l}` : l);
  const startedAt = new Date();
  // The 1-minute load average every 5 s: how busy the box was while this ran (other work included).
  const load: number[] = [loadavg()[0]!];
  const sampler = setInterval(() => load.push(loadavg()[0]!), 5_000);
  sampler.unref();
  const onTargets = (["000", "000-gateway", "001", "002", "paths"] as const).some((g) => opts.groups.has(g));
  for (const t of onTargets ? opts.targets : []) await runTarget(t, opts, rows, log);
  let latencyNote: string | null = null;
  for (let round = 1; opts.groups.has("003") && round <= opts.rounds; round++) {
    latencyNote = await runLatency({
      opts,
      log,
      add: (r) => {
        r.round = round;
        rows.push(r);
      },
    });
  }
  // Encryption at rest: its own single nats-server per cipher (the key is server config).
  for (let round = 1; opts.groups.has("enc") && round <= opts.rounds; round++) {
    if (opts.rounds > 1) log(`\n--- encryption: round ${round} of ${opts.rounds} ---`);
    const add = (r: Row): void => {
      r.round = round;
      rows.push(r);
      log(`[enc] ${r.workload}: ${r.status === "ok" ? `${r.metric} ${fmtNum(r.value!)}` : `${r.status.toUpperCase()} — ${r.note ?? ""}`}`);
    };
    await runEncryption({ opts, log, add }, round);
  }
  clearInterval(sampler);
  const meta: RunMeta = {
    startedAt,
    finishedAt: new Date(),
    quick: opts.quick,
    targets: [...opts.targets],
    cores: cpus().length,
    cpu: cpus()[0]?.model ?? "unknown",
    node: process.version,
    natscli: NATSCLI_VERSION,
    natsServer: execFileSync(NATS_SERVER_BIN, ["--version"], { encoding: "utf8" })
      .trim()
      .replace(/^nats-server: /, ""),
    counts: opts.counts,
    rounds: opts.rounds,
    maxLoad: Math.max(...load, loadavg()[0]!),
    medianLoad: [...load].sort((a, b) => a - b)[Math.floor(load.length / 2)]!,
    latencyNote,
    argv: process.argv.slice(2),
  };
  const failed = rows.filter((r) => r.status === "failed");
  if (opts.outDir) {
    mkdirSync(opts.outDir, { recursive: true });
    const base = join(opts.outDir, opts.name);
    writeFileSync(`${base}.json`, JSON.stringify({ version: 1, meta, rows }, null, 2) + "\n");
    writeFileSync(`${base}.md`, renderMarkdown(rows, meta, `${opts.name}.png`));
    if (opts.chart) await renderPng(rows, meta, `${base}.png`);
    log(`\nwrote ${base}.{md,json${opts.chart ? ",png" : ""}}`);
  }
  log(
    `\n${rows.length} rows: ${rows.filter((r) => r.status === "ok").length} ok, ${rows.filter((r) => r.status === "skipped").length} skipped, ${failed.length} failed`,
  );
  for (const r of failed) log(`FAILED ${r.workload} (${r.target}, ${r.path}): ${r.note ?? ""}`);
  return failed.length ? 1 : 0;
});
