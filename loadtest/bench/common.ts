// Shared bits of the benchmarks: servers (from the test kit in gateway/testkit), percentiles, pinning.
import { execFileSync, type ChildProcess } from "node:child_process";
import { startNatsServer } from "#testkit/nats-server.js";
import { startGateway } from "#testkit/gateway.js";
import { waitFor } from "#testkit/wait.js";
import { cpus } from "node:os";
import { resolve } from "node:path";

export const ROOT = resolve(import.meta.dirname, "../../..");
export const CLI = resolve(ROOT, "dist/gateway/fanout-gateway.mjs");

export const nowUs = (): number => Math.round((performance.timeOrigin + performance.now()) * 1000);

/** The test kit's polling wait (gateway/testkit/wait.ts) under the benchmarks' old name. */
export const until = <T>(check: () => T | undefined | false | Promise<T | undefined | false>, ms: number, what: string): Promise<T> =>
  waitFor(check, { timeoutMs: ms, what });

/** The test kit's nats-server (ephemeral ports, temp store, readiness by /healthz). */
export async function startNats(): Promise<{ url: string; proc: ChildProcess; stop(): Promise<void> }> {
  const h = await startNatsServer();
  return { url: h.url, proc: h.process, stop: () => h.stop() };
}

/** The test kit's gateway with the benchmarks' settings: info logs, per-IP abuse limits off (every client is 127.0.0.1). */
export async function startGatewayProc(
  natsUrl: string,
  workers: number,
  extra: string[] = [],
  cli = CLI,
  env?: Record<string, string>,
): Promise<{ port: number; proc: ChildProcess }> {
  // BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles the gateway's processes.
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean);
  const gw = await startGateway({
    natsUrl,
    workers,
    cli,
    nodeArgs,
    logLevel: "info",
    inheritStderr: true,
    // An env var, not a flag: bench:ab runs older builds too, which would refuse a flag they do not know.
    env: { PUBLISH_RATE: "-1", ...env },
    args: ["--max-connections-per-ip=-1", "--connect-rate-per-ip=-1", "--frame-rate=-1", "--read-rate-per-ip=-1", ...extra],
  });
  return { port: gw.port, proc: gw.process };
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
    return execFileSync("pgrep", ["-P", String(pid)], { encoding: "utf8" })
      .trim()
      .split("\n")
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/**
 * A long run's guard: `cleanup` runs at the end, on SIGINT/SIGTERM (exit 130) and when `deadlineMs` passes
 * (exit 2), so that no process the run started outlives it. Resolves with `body`'s exit code.
 */
export async function guarded(say: (s: string) => void, deadlineMs: number, cleanup: () => Promise<void>, body: () => Promise<number>): Promise<number> {
  const onSignal = () => {
    say("interrupted: stopping everything");
    void cleanup().finally(() => process.exit(130));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  const hard = setTimeout(() => {
    say("hard deadline passed: stopping everything");
    void cleanup().finally(() => process.exit(2));
  }, deadlineMs);
  try {
    return await body();
  } finally {
    clearTimeout(hard);
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await cleanup();
  }
}
