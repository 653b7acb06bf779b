// The nats CLI (natscli v0.5.1, built into .tools/bin by scripts/setup-bench-tools.sh): running it with a time
// limit, and reading the figures `nats bench` prints.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { ROOT } from "../common.js";

export const NATSCLI_VERSION = "v0.5.1";
export const NATS_CLI = process.env.NATS_CLI_BIN ?? resolve(ROOT, ".tools/bin/nats");

export class NatsCliError extends Error {
  override readonly name = "NatsCliError";
  constructor(
    message: string,
    readonly args: readonly string[],
    readonly output: string,
  ) {
    super(message);
  }
}

/** Throws with the set-up hint when the CLI is not installed. */
export function requireNatsCli(): void {
  if (!existsSync(NATS_CLI)) throw new NatsCliError(`${NATS_CLI} is missing: run scripts/setup-bench-tools.sh (npm run bench:jetstream does)`, [], "");
}

export type CliRun = { code: number | null; stdout: string; stderr: string; ms: number; timedOut: boolean };

/** A nats CLI process started with a time limit; `done` settles when it exits (or is killed at the limit). */
export type CliProc = { child: ChildProcess; done: Promise<CliRun>; kill(): void; /** stdout and stderr so far. */ output(): string };

/**
 * Starts `nats <args> -s <servers>`. `prefix` runs it through another command (ip netns exec …). The process
 * is SIGKILLed at `timeoutMs`; its result then says timedOut.
 */
export function startNats(args: readonly string[], servers: string, timeoutMs: number, prefix: readonly string[] = []): CliProc {
  const full = [...prefix, NATS_CLI, ...args, "-s", servers, "--no-context"];
  const child = spawn(full[0]!, full.slice(1), { stdio: ["ignore", "pipe", "pipe"] });
  const t0 = performance.now();
  let stdout = "";
  let stderr = "";
  let timedOut = false;
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, timeoutMs);
  const done = new Promise<CliRun>((res) => {
    child.on("error", (e) => {
      stderr += String(e);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      res({ code, stdout, stderr, ms: performance.now() - t0, timedOut });
    });
  });
  return { child, done, kill: () => child.kill("SIGKILL"), output: () => stdout + stderr };
}

/** Runs a nats CLI command to completion and throws unless it exits 0. */
export async function runNats(args: readonly string[], servers: string, timeoutMs = 30_000, prefix: readonly string[] = []): Promise<CliRun> {
  const r = await startNats(args, servers, timeoutMs, prefix).done;
  if (r.code !== 0) {
    const why = r.timedOut ? `timed out after ${timeoutMs} ms` : `exited ${r.code}`;
    throw new NatsCliError(`nats ${args.join(" ")} ${why}: ${(r.stderr + r.stdout).trim().slice(-600)}`, args, r.stdout + r.stderr);
  }
  return r;
}

/** One client's line of `nats bench`: `[1] 5,579 msgs/sec ~ 5.4 MiB/sec ~ min: 36.24us ~ avg: … (1,000 msgs)`. */
export type BenchClient = { client: number; msgsPerSec: number; msgs: number; latencyUs?: { min: number; avg: number; max: number; p50: number; p99: number } };

/** What one `nats bench` run printed. */
export type BenchOutput = {
  clients: BenchClient[];
  /** The "aggregated stats" line: messages over the span from the first client's start to the last one's end. */
  aggregate: number;
  /** The per-operation latency summary (publishers and KV puts only). */
  latencyUs?: { min: number; avg: number; max: number; p50: number; p99: number };
  /** The result lines as printed, for the nats-bench-style log. */
  lines: string[];
};

const num = (s: string): number => Number(s.replace(/,/g, ""));

/** Reads a latency figure (`36.24us`, `1.5ms`, `2s`) as microseconds. */
export function durationUs(s: string): number {
  const m = /^([\d,.]+)(ns|us|µs|ms|s)$/.exec(s.trim());
  if (!m) return NaN;
  const v = num(m[1]!);
  return m[2] === "ns" ? v / 1000 : m[2] === "ms" ? v * 1000 : m[2] === "s" ? v * 1e6 : v;
}

function latencyOf(line: string): BenchOutput["latencyUs"] {
  const f = (k: string): number => {
    const m = new RegExp(`${k}:?\\s+([\\d,.]+(?:ns|us|µs|ms|s))`, "i").exec(line);
    return m ? durationUs(m[1]!) : NaN;
  };
  const l = { min: f("min"), avg: f("avg"), max: f("max"), p50: f("P50"), p99: f("P99") };
  return Number.isFinite(l.avg) ? l : undefined;
}

/** Parses `nats bench` output (v0.5.1 format). Throws when there is no aggregated figure. */
export function parseBench(stdout: string): BenchOutput {
  const lines = stdout.split("\n").map((l) => l.trimEnd());
  const clients: BenchClient[] = [];
  let aggregate = NaN;
  let latencyUs: BenchOutput["latencyUs"];
  const kept: string[] = [];
  let single: BenchClient | undefined;
  for (const line of lines) {
    const c = /^\s*\[(\d+)\]\s+([\d,]+) msgs\/sec.*\(([\d,]+) msgs\)\s*$/.exec(line);
    if (c) {
      const lat = /min: /.test(line) ? latencyOf(line.replace(/ ~ /g, " ")) : undefined;
      clients.push({ client: Number(c[1]), msgsPerSec: num(c[2]!), msgs: num(c[3]!), ...(lat ? { latencyUs: lat } : {}) });
      kept.push(line);
      continue;
    }
    const a = /aggregated stats: ([\d,]+) msgs\/sec/.exec(line);
    if (a && !Number.isFinite(aggregate)) {
      aggregate = num(a[1]!);
      kept.push(line.trim());
      continue;
    }
    // One client: no per-client lines, one "<kind> stats:" line with its rate and latencies.
    const one = /^\s*NATS .* stats: ([\d,]+) msgs\/sec/.exec(line);
    if (one && !Number.isFinite(aggregate)) {
      aggregate = num(one[1]!);
      const lat = /min: /.test(line) ? latencyOf(line.replace(/ ~ /g, " ")) : undefined;
      single = { client: 1, msgsPerSec: aggregate, msgs: NaN, ...(lat ? { latencyUs: lat } : {}) };
      if (lat) latencyUs = lat;
      kept.push(line.trim());
      continue;
    }
    if (/^\s*message rates min/.test(line)) kept.push(line.trim());
    if (/^\s*latencies per operation/.test(line)) {
      latencyUs = latencyOf(line);
      kept.push(line.trim());
    }
  }
  if (!Number.isFinite(aggregate)) throw new Error(`no aggregated figure in nats bench output: ${stdout.trim().slice(-400)}`);
  if (clients.length === 0 && single) clients.push(single);
  return { clients, aggregate, ...(latencyUs ? { latencyUs } : {}), lines: kept };
}
