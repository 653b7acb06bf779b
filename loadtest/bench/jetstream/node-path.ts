// Starting the project's own clients from the evaluation: a forked nats.js job (node-client.ts) and the
// pub-cluster load tool (its CLI, so a run can be killed as a whole at its time limit).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ROOT } from "../common.js";
import type { FromNodeClient, NodeJob, NodeResult } from "./node-client.js";
import type { PubResult } from "../../../pubtools/src/master.js";
import { LatencyStats } from "../../../subtools/src/shared/mod.js";

const NODE_CLIENT = fileURLToPath(new URL("./node-client.js", import.meta.url));
const PUB_CLUSTER = resolve(ROOT, "pubtools/pub-cluster.js");
/** Time a process gets beyond its job's own limit to report and exit. */
const GRACE_MS = 15_000;

export type NodeRun = {
  /** Resolves once the job's consumers are subscribed (or its publisher connected). */
  ready: Promise<void>;
  result: Promise<NodeResult>;
  kill(): void;
};

/** Forks node-client.ts for one job; `prefix` runs it through another command (ip netns exec …). */
export function startNodeJob(job: NodeJob, prefix: readonly string[] = []): NodeRun {
  const argv = [...prefix, process.execPath, NODE_CLIENT];
  const child: ChildProcess = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  let onReady!: () => void;
  let onFail!: (e: Error) => void;
  const ready = new Promise<void>((res, rej) => {
    onReady = res;
    onFail = rej;
  });
  const result = new Promise<NodeResult>((res, rej) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), job.timeoutMs + GRACE_MS);
    let settled = false;
    child.on("message", (m: FromNodeClient) => {
      if (m.type === "ready") onReady();
      else if (m.type === "result") {
        settled = true;
        res(m.result);
      } else {
        settled = true;
        const e = new Error(`node client (${job.kind}): ${m.message}`);
        onFail(e);
        rej(e);
      }
    });
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      if (settled) return;
      const e = new Error(`node client (${job.kind}) exited ${code ?? signal} without a result`);
      onFail(e);
      rej(e);
    });
  });
  // A failure before "ready" rejects both; keep the second from being reported as unhandled.
  ready.catch(() => undefined);
  child.send({ type: "start", job });
  return { ready, result, kill: () => child.kill("SIGKILL") };
}

/** pub-cluster's report plus the command line that produced it; cpuPct: its busiest process, % of one core. */
export type PubClusterRun = { result: PubResult; ack: LatencyStats; command: string; cpuPct: number };

/**
 * Runs `pub-cluster <args> --json <tmp> --quiet --no-clock` and reads its JSON report. The whole process group
 * is killed at `timeoutMs`.
 */
export async function runPubCluster(args: readonly string[], timeoutMs: number): Promise<PubClusterRun> {
  const dir = mkdtempSync(join(tmpdir(), "fgw-js-pub-"));
  const file = join(dir, "pub.json");
  const full = [...args, "--json", file, "--quiet", "--no-clock"];
  const command = `pub-cluster ${args.map((a) => (a === "" ? '""' : a)).join(" ")}`;
  try {
    const child = spawn(process.execPath, [PUB_CLUSTER, ...full], { stdio: ["ignore", "ignore", "pipe"], detached: true });
    let stderr = "";
    child.stderr!.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    }, timeoutMs);
    const code = await new Promise<number | null>((res) => child.on("close", (c) => res(c)));
    clearTimeout(timer);
    if (timedOut) throw new Error(`${command}: timed out after ${timeoutMs} ms`);
    let result: PubResult;
    try {
      result = JSON.parse(readFileSync(file, "utf8")) as PubResult;
    } catch {
      throw new Error(`${command}: exited ${code} without a report: ${stderr.trim()}`);
    }
    if (result.counts.failed > 0) throw new Error(`${command}: ${result.counts.failed} publishes failed (${result.errors[0] ?? "no error text"})`);
    return { result, ack: LatencyStats.fromJSON(result.ack), command, cpuPct: Math.max(0, ...result.cpu.map((c) => c.avgPct)) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
