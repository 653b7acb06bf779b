// The test kit's gateway: spawns the real CLI (dist/) as a process tree and waits for its "gateway ready" log
// line. Used by the tests and the benchmarks (which pass another build's CLI to compare revisions).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { waitFor } from "./wait.js";
import { PACKAGE_ROOT } from "../src/config/config.js";

/**
 * Gateways started here and still running. When this process exits (a run stopped while a start was still
 * under way, a test runner's worker ending), each is killed, so none outlives what started it; its workers
 * see their primary's IPC channel close and exit too.
 */
const live = new Set<ChildProcess>();
process.once("exit", () => {
  for (const c of live) if (c.exitCode === null) c.kill("SIGKILL");
});

export const CLI = resolve(PACKAGE_ROOT, "dist/gateway/fanout-gateway.mjs");

export type LogLine = Record<string, unknown> & { msg?: string; level?: number; pid?: number };

export type GatewayHandle = {
  port: number;
  url: string;
  /** Where /metrics and /v1/stats are: the admin listener when there is one, else the public port. */
  metricsUrl: string;
  wsUrl: string;
  process: ChildProcess;
  logs: LogLine[];
  stderr: () => string;
  /** pids of the worker processes (from their log lines and the primary's cluster). */
  workerPids: () => number[];
  /** Sends a signal and waits for exit; resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  exited: Promise<number | null>;
};

export type GatewayOptions = {
  /** How long to wait for "gateway ready" (30 s; longer where NATS may be electing leaders). */
  readyTimeoutMs?: number;
  natsUrl?: string | string[];
  workers?: number;
  args?: string[];
  env?: Record<string, string>;
  logLevel?: string;
  port?: number;
  /** Another build's CLI (benchmarks comparing revisions); default this checkout's dist. */
  cli?: string;
  /** Node flags for every process of the gateway (e.g. --cpu-prof). */
  nodeArgs?: string[];
  /** stderr goes to the parent's (benchmarks) instead of being kept. */
  inheritStderr?: boolean;
  /** The embedded nats-server's store (default: a temp directory removed at exit): a restart on the same store. */
  natsDataDir?: string;
  /**
   * The gateway leads a process group of its own, and stop() signals the whole group, as a terminal's Ctrl-C
   * does (the primary, its workers and any server it started get the signal).
   */
  processGroup?: boolean;
};

export async function startGateway(opts: GatewayOptions = {}): Promise<GatewayHandle> {
  const dataDir = mkdtempSync(join(tmpdir(), "fgw-gw-"));
  const args = [
    ...(opts.nodeArgs ?? []),
    opts.cli ?? CLI,
    "--port",
    String(opts.port ?? 0),
    "--workers",
    String(opts.workers ?? 2),
    "--nats-data-dir",
    opts.natsDataDir ?? join(dataDir, "nats"),
    "--log-level",
    opts.logLevel ?? "debug",
    ...(opts.args ?? []),
  ];
  // With authentication on, the admin listener defaults to 127.0.0.1:9100: give each test gateway a free port.
  const authOn =
    ["JWT_SECRET", "JWT_PUBLIC_KEY_FILE", "JWT_JWKS_FILE"].some((k) => opts.env?.[k]) || args.some((a) => /^--jwt-(secret|public-key-file|jwks-file)/.test(a));
  if (authOn && !args.some((a) => a.startsWith("--admin-port"))) args.push("--admin-port", "0");
  const natsUrl = Array.isArray(opts.natsUrl) ? opts.natsUrl.join(",") : opts.natsUrl;
  if (natsUrl) args.push("--nats-url", natsUrl);
  const env = { ...process.env, ...(opts.env ?? {}) };
  delete env.FGW_WORKER_CONFIG;
  const child = spawn(process.execPath, args, {
    env,
    stdio: ["ignore", "pipe", opts.inheritStderr ? "inherit" : "pipe"],
    detached: opts.processGroup === true,
  });
  live.add(child);
  child.once("exit", () => live.delete(child));
  const logs: LogLine[] = [];
  let stderr = "";
  let buf = "";
  child.stdout!.on("data", (d: Buffer) => {
    buf += d.toString();
    let i: number;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        logs.push(JSON.parse(line) as LogLine);
      } catch {
        logs.push({ msg: line });
      }
    }
  });
  child.stderr?.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-20_000);
  });
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  exited.then(
    () => rmSync(dataDir, { recursive: true, force: true }),
    () => undefined,
  );

  let ready: LogLine;
  try {
    ready = await waitFor(
      () => {
        if (child.exitCode !== null) throw new Error(`gateway exited ${child.exitCode}: ${stderr}\n${JSON.stringify(logs.slice(-5))}`);
        return logs.find((l) => l.msg === "gateway ready");
      },
      { timeoutMs: opts.readyTimeoutMs ?? 30_000, what: "gateway ready" },
    );
  } catch (e) {
    // A gateway that never became ready is not left running after the test (it would outlive the run).
    if (child.exitCode === null) child.kill("SIGKILL");
    throw e;
  }
  const port = ready.port as number;
  const adminPort = ready.adminPort as number | undefined;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    metricsUrl: `http://127.0.0.1:${adminPort ?? port}`,
    wsUrl: `ws://127.0.0.1:${port}/ws`,
    process: child,
    logs,
    stderr: () => stderr,
    workerPids: () => [...new Set(logs.filter((l) => l.role === "worker" && typeof l.pid === "number").map((l) => l.pid as number))],
    exited,
    async stop(signal: NodeJS.Signals = "SIGTERM") {
      if (child.exitCode !== null) return child.exitCode;
      if (opts.processGroup && child.pid !== undefined) process.kill(-child.pid, signal);
      else child.kill(signal);
      const t = setTimeout(() => child.kill("SIGKILL"), 20_000);
      const code = await exited;
      clearTimeout(t);
      return code;
    },
  };
}

/** Pids of live worker processes of a gateway primary (children running the CLI), from /proc. */
export async function childPids(pid: number): Promise<number[]> {
  const { readFileSync } = await import("node:fs");
  try {
    const raw = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim();
    return raw ? raw.split(/\s+/).map(Number) : [];
  } catch {
    return [];
  }
}

/**
 * Waits until every worker of `gw` has logged, at or after log line `from`, that `stream` was recreated (each
 * worker does once it has read the new epoch). On a timeout the error carries what the workers logged about
 * the stream since `from`, so a failure says whether an advisory came, or the state read failed.
 */
export async function waitForNewEpoch(gw: GatewayHandle, stream: string, from: number, timeoutMs = 20_000): Promise<void> {
  const about = () => gw.logs.slice(from).filter((l) => l.role === "worker" && l.stream === stream);
  const workers = gw.workerPids().length;
  try {
    await waitFor(
      () =>
        new Set(
          about()
            .filter((l) => String(l.msg).startsWith("stream was recreated"))
            .map((l) => l.pid),
        ).size >= workers || undefined,
      {
        what: `all ${workers} workers to see ${stream} recreated`,
        timeoutMs,
      },
    );
  } catch (e) {
    const seen = about().map((l) => `${String(l.pid)}: ${String(l.msg)}${l.err ? ` (${JSON.stringify(l.err)})` : ""}`);
    throw new Error(`${(e as Error).message}; the workers logged about ${stream}: ${seen.length ? seen.join(" | ") : "nothing"}`, { cause: e });
  }
}
