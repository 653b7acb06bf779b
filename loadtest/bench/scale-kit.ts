// Shared bits of bench:channels and bench:storm: many sockets over several client processes and several
// loopback destination addresses, process CPU and RSS from /proc, the test kit's redis-server, the gateway's
// metrics, the stream's consumer count. Everything here is bounded in count and time.
import { execFileSync, fork, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import WebSocket from "ws";
import { ROOT, childPids, percentile } from "./common.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { startRedisServer } from "#testkit/redis-server.js";
import type { ProgressLine } from "../../subtools/src/master.js";

export const now = (): number => performance.timeOrigin + performance.now();
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// --- /proc ---

const CLK_TCK = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** utime+stime of a process (all its threads) in seconds, and its resident set in bytes; undefined when gone. */
export function procStat(pid: number): { cpuSec: number; rssBytes: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // After "pid (comm) ": state is field 3, utime 14, stime 15 → indexes 11 and 12 here.
    const ticks = Number(f[11]) + Number(f[12]);
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return { cpuSec: ticks / CLK_TCK, rssBytes: m ? Number(m[1]) * 1024 : 0 };
  } catch {
    return undefined;
  }
}

/** Summed over processes. */
export function groupStat(pids: number[]): { cpuSec: number; rssBytes: number; alive: number } {
  let cpuSec = 0;
  let rssBytes = 0;
  let alive = 0;
  for (const p of pids) {
    const s = procStat(p);
    if (!s) continue;
    cpuSec += s.cpuSec;
    rssBytes += s.rssBytes;
    alive++;
  }
  return { cpuSec, rssBytes, alive };
}

/**
 * Waits until the summed RSS of `pids()` moves less than 1 % between two samples a second apart (for at most
 * `boundMs`, then goes on with what it has) and returns the last sample.
 */
export async function settledRss(pids: () => number[], boundMs = 20_000): Promise<number> {
  let last = groupStat(pids()).rssBytes;
  const deadline = performance.now() + boundMs;
  while (performance.now() < deadline) {
    await sleep(1_000);
    const now = groupStat(pids()).rssBytes;
    const still = Math.abs(now - last) < last * 0.01;
    last = now;
    if (still) break;
  }
  return last;
}

/** A gateway's processes: the primary and its workers (its direct children; no embedded broker in these benches). */
export const gatewayPids = (gw: GatewayHandle): number[] => [gw.process.pid!, ...childPids(gw.process.pid!)];

// --- servers ---

/** A redis-server from the test kit (free loopback port, no persistence), room for 1,000 clients. */
export async function startRedis(): Promise<{ url: string; proc: ChildProcess; stop(): Promise<void> }> {
  const r = await startRedisServer({ extraArgs: ["--maxclients", "1000"] });
  return { url: r.url, proc: r.process, stop: () => r.stop() };
}

/** The gateway CLI with the scale benches' settings: per-IP limits off, room for 100,000 sockets per worker. */
/** BENCH_NODE_ARGS (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) reach every gateway process, as in common.ts. */
export function startScaleGateway(opts: { natsUrl?: string; workers: number; extra?: string[] }): Promise<GatewayHandle> {
  return startGateway({
    nodeArgs: (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean),
    natsUrl: opts.natsUrl,
    workers: opts.workers,
    logLevel: "info",
    inheritStderr: true,
    args: [
      // Sockets are spread over destination addresses 127.0.0.x: an unauthenticated gateway listens on
      // 127.0.0.1 alone unless told otherwise.
      "--host=0.0.0.0",
      "--max-connections-per-ip=-1",
      "--connect-rate-per-ip=-1",
      "--frame-rate=-1",
      "--publish-rate=-1",
      "--read-rate-per-ip=-1",
      "--max-connections",
      "100000",
      ...(opts.extra ?? []),
    ],
  });
}

/** Sums of the gateway's Prometheus metrics by name (labels summed over). */
export async function scrapeMetrics(url: string, timeoutMs = 10_000): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  try {
    const r = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
    for (const line of (await r.text()).split("\n")) {
      if (!line || line.startsWith("#")) continue;
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
      if (!m) continue;
      out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[3]);
    }
  } catch {
    /* a failed scrape leaves the figures out */
  }
  return out;
}

/** Warnings and errors the gateway logged (level >= 40), deduplicated by message, with counts. */
export function gatewayWarnings(gw: GatewayHandle, ignore: RegExp[] = []): { msg: string; count: number; sample: string }[] {
  const by = new Map<string, { msg: string; count: number; sample: string }>();
  for (const l of gw.logs) {
    if ((l.level ?? 0) < 40) continue;
    const msg = String(l.msg ?? "");
    if (ignore.some((r) => r.test(msg))) continue;
    const e = by.get(msg) ?? { msg, count: 0, sample: JSON.stringify(l, (k, v: unknown) => (k === "stack" ? undefined : v)).slice(0, 600) };
    e.count++;
    by.set(msg, e);
  }
  return [...by.values()];
}

// --- client processes ---

/** The lines of a sub-cluster `--progress` file so far (it appends one a second); none before it exists. */
export function progressLines(file: string): ProgressLine[] {
  try {
    return readFileSync(file, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as ProgressLine);
  } catch {
    return [];
  }
}

export type ClientProc = { child: ChildProcess; ask<T>(msg: object, reply: string, timeoutMs: number): Promise<T> };

/** Forks `script` as a client process with `args`; ask() sends a message and waits for the reply of that type. */
export function forkClient(script: string, args: string[]): ClientProc {
  const child = fork(script, args, { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const ask = <T>(msg: object, reply: string, timeoutMs: number): Promise<T> =>
    new Promise<T>((res, rej) => {
      const onMsg = (m: { type: string }): void => {
        if (m.type !== reply) return;
        clearTimeout(t);
        child.off("message", onMsg);
        child.off("exit", onExit);
        res(m as T);
      };
      const onExit = (code: number | null): void => {
        clearTimeout(t);
        child.off("message", onMsg);
        rej(new Error(`client process exited (${code}) before '${reply}'`));
      };
      const t = setTimeout(() => {
        child.off("message", onMsg);
        child.off("exit", onExit);
        rej(new Error(`client process: no '${reply}' within ${timeoutMs} ms`));
      }, timeoutMs);
      child.on("message", onMsg);
      child.once("exit", onExit);
      if (Object.keys(msg).length > 0) child.send(msg);
    });
  return { child, ask };
}

/** Tells the client processes to close their sockets and exit; kills those that do not within 10 s. */
export async function stopClients(clients: ClientProc[]): Promise<void> {
  await Promise.all(
    clients.map(async ({ child }) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      try {
        child.send({ type: "exit" });
      } catch {
        /* already gone */
      }
      const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(t);
    }),
  );
}

/** A client process ends with its parent (IPC closed), so nothing outlives the benchmark. */
export function clientLifecycle(onExit: () => void): void {
  process.on("disconnect", () => {
    onExit();
    process.exit(0);
  });
  process.on("message", (m: { type: string }) => {
    if (m.type === "exit") {
      onExit();
      setTimeout(() => process.exit(0), 50);
    }
  });
}

/**
 * Destination addresses: one source/destination pair gives ~28,000 ephemeral ports, so sockets go round
 * robin to 127.0.0.1, 127.0.0.2, … (the gateway listens on 0.0.0.0). Two pairs per 20,000 sockets, at least 2.
 */
export const destinationsFor = (sockets: number): number => Math.max(2, Math.ceil(sockets / 10_000));

export type OpenResult = { sockets: (WebSocket | undefined)[]; failed: number; failures: string[]; ms: number };

/**
 * Opens `count` sockets (socket k to ws://127.0.0.<(base+k) % dests + 1>:port/ws), `concurrency` handshakes
 * in flight; `onOpen` runs as each opens (in order of opening). Failed handshakes are counted, not retried.
 */
export async function openSockets(opts: {
  port: number;
  count: number;
  base: number;
  dests: number;
  concurrency: number;
  onOpen: (ws: WebSocket, k: number) => void;
  onUnexpectedClose: (k: number, code: number) => void;
}): Promise<OpenResult> {
  const sockets: (WebSocket | undefined)[] = new Array(opts.count);
  const failures: string[] = [];
  let failed = 0;
  let next = 0;
  const t0 = now();
  const one = (k: number): Promise<void> =>
    new Promise((res) => {
      const host = `127.0.0.${((opts.base + k) % opts.dests) + 1}`;
      const ws = new WebSocket(`ws://${host}:${opts.port}/ws`, { perMessageDeflate: false, skipUTF8Validation: true, handshakeTimeout: 30_000 });
      let opened = false;
      const fail = (why: string): void => {
        if (opened) return;
        opened = true; // settled
        failed++;
        if (failures.length < 5) failures.push(why);
        ws.terminate();
        res();
      };
      ws.once("open", () => {
        opened = true;
        sockets[k] = ws;
        ws.on("close", (code: number) => {
          if (!(ws as WebSocket & { fgwClosing?: boolean }).fgwClosing) opts.onUnexpectedClose(k, code);
        });
        opts.onOpen(ws, k);
        res();
      });
      ws.once("unexpected-response", (_req, r) => fail(`HTTP ${r.statusCode} from ${host}`));
      ws.on("error", (e: Error) => fail(`${e.message} (${host})`)); // after open: the close that follows is reported
    });
  const lane = async (): Promise<void> => {
    while (next < opts.count) await one(next++);
  };
  await Promise.all(Array.from({ length: Math.min(opts.concurrency, opts.count) }, lane));
  return { sockets, failed, failures, ms: now() - t0 };
}

/** Closes sockets quietly (no unexpected-close reports). */
export function closeAll(sockets: (WebSocket | undefined)[]): void {
  for (const ws of sockets) {
    if (!ws) continue;
    (ws as WebSocket & { fgwClosing?: boolean }).fgwClosing = true;
    ws.terminate();
  }
}

// --- frames ---

const SEQ = Buffer.from('"seq":');
const TS = Buffer.from('"ts":');

/** `{"op":"msg"…` without parsing: the gateway writes op first. */
export const isMsgFrame = (d: Buffer): boolean => d[2] === 0x6f && d[7] === 0x6d && d[8] === 0x73;

/** The integer after `"seq":` (the first one: msg frames carry the channel and sub before it). */
export function frameSeq(d: Buffer): number {
  let i = d.indexOf(SEQ);
  if (i < 0) return -1;
  i += SEQ.length;
  let n = 0;
  for (let c = d[i]!; c >= 0x30 && c <= 0x39; c = d[++i]!) n = n * 10 + (c - 0x30);
  return n;
}

/** The number after `"ts":` (ms with µs decimals). */
export function frameTs(d: Buffer): number {
  const i = d.indexOf(TS);
  if (i < 0) return NaN;
  let j = i + TS.length;
  while (j < d.length && d[j] !== 0x2c && d[j] !== 0x7d) j++;
  return Number(d.toString("latin1", i + TS.length, j));
}

// --- figures ---

export type Pcts = { n: number; p50: number; p99: number; max: number };
export function pcts(values: number[]): Pcts {
  const s = Float64Array.from(values).sort();
  const a = Array.from(s);
  return { n: a.length, p50: percentile(a, 50), p99: percentile(a, 99), max: a.length ? a[a.length - 1]! : NaN };
}

export { rng } from "./rng.js";

export function loadAvg(): string {
  try {
    return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  } catch {
    return "?";
  }
}

/** The checkout measured: HEAD, and whether gateway/src has uncommitted changes. */
export function revision(): string {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "gateway/src"], { cwd: ROOT, encoding: "utf8" }).trim() !== "";
    return `gateway at ${head}${dirty ? " with uncommitted changes in gateway/src" : ""}`;
  } catch {
    return "gateway revision unknown";
  }
}
