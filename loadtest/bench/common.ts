// Shared bits of the benchmarks: processes, servers, percentiles.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const ROOT = resolve(import.meta.dirname, "../../..");
export const NATS_BIN = resolve(ROOT, ".tools/bin/nats-server");
export const CLI = resolve(ROOT, "dist/gateway/src/cli.js");

export const nowUs = (): number => Math.round((performance.timeOrigin + performance.now()) * 1000);

export async function until<T>(check: () => T | undefined | false | Promise<T | undefined | false>, ms: number, what: string): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v as T;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export async function startNats(): Promise<{ url: string; proc: ChildProcess }> {
  const dir = mkdtempSync(join(tmpdir(), "fgw-bench-nats-"));
  const proc = spawn(NATS_BIN, ["-a", "127.0.0.1", "-p", "-1", "-js", "-sd", join(dir, "js"), "--ports_file_dir", dir], { stdio: "ignore" });
  const ports = await until(() => {
    const f = readdirSync(dir).find((n) => n.endsWith(".ports"));
    try { return f ? (JSON.parse(readFileSync(join(dir, f), "utf8")) as { nats: string[] }) : undefined; } catch { return undefined; }
  }, 10_000, "nats-server");
  return { url: ports.nats[0]!, proc };
}

export async function startGatewayProc(natsUrl: string, workers: number, extra: string[] = [], cli = CLI): Promise<{ port: number; proc: ChildProcess }> {
  // BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles the gateway's processes.
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean);
  const proc = spawn(process.execPath, [...nodeArgs, cli, "--port", "0", "--workers", String(workers), "--nats-url", natsUrl, "--log-level", "info",
    // Every benchmark client comes from 127.0.0.1: lift the per-IP abuse limits.
    "--max-connections-per-ip=-1", "--connect-rate-per-ip=-1", "--frame-rate=-1", ...extra], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  proc.stdout!.on("data", (d: Buffer) => { out += d.toString(); });
  const port = await until(() => {
    const m = /"port":(\d+)[^\n]*"msg":"gateway ready"/.exec(out);
    return m ? Number(m[1]) : undefined;
  }, 30_000, "gateway ready");
  return { port, proc };
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export const fmt = (n: number, d = 0): string => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });

/**
 * Pins a process (all its threads) to one CPU with taskset; false when that is not possible here (one CPU,
 * no taskset). Benchmarks on small machines use it to give the process under test a core of its own.
 */
export function pinToCpu(pid: number, cpu: number): boolean {
  if (cpus().length <= cpu) return false;
  try {
    execFileSync("taskset", ["-apc", String(cpu), String(pid)], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** The pids of a process's direct children (the gateway's cluster workers). */
export function childPids(pid: number): number[] {
  try {
    return execFileSync("pgrep", ["-P", String(pid)], { encoding: "utf8" }).trim().split("\n").filter(Boolean).map(Number);
  } catch {
    return [];
  }
}
