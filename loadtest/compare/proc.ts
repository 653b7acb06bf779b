// Processes of a comparison run: the gateway CLI, the load tools, and CPU read from /proc.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { CLI, ROOT, until } from "../bench/common.js";

export const SUB_CLI = resolve(ROOT, "subtools/sub-cluster.js");
export const PUB_CLI = resolve(ROOT, "pubtools/pub-cluster.js");

export type Proc = {
  child: ChildProcess;
  out: () => string;
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code. */
  stop(graceMs?: number): Promise<number | null>;
};

/** Starts a node CLI with stdout and stderr collected (the last 200 KB). */
export function runNode(args: string[]): Proc {
  return runProc(process.execPath, args);
}

/** Starts `command` with stdout and stderr collected (the last 200 KB). */
export function runProc(command: string, args: string[]): Proc {
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  const collect = (d: Buffer): void => {
    out += d.toString();
    if (out.length > 400_000) out = out.slice(-200_000);
  };
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  return {
    child,
    out: () => out,
    exited,
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), graceMs);
      const code = await exited;
      clearTimeout(t);
      return code;
    },
  };
}

/** Waits for a process's exit for at most `ms`, then stops it; resolves with the code and whether it was cut. */
export async function bounded(p: Proc, ms: number): Promise<{ code: number | null; cut: boolean }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"cut">((r) => {
    timer = setTimeout(() => r("cut"), ms);
  });
  const first = await Promise.race([p.exited, timeout]);
  clearTimeout(timer);
  if (first !== "cut") return { code: first, cut: false };
  return { code: await p.stop(5_000), cut: true };
}

export type Gateway = Proc & { port: number };

/** The gateway CLI on a free port, its broker embedded (nats-server or redis-server), abuse limits off. */
export async function startGateway(broker: "jetstream" | "redis", workers: number, dataDir: string): Promise<Gateway> {
  const p = runNode([
    CLI,
    "--port",
    "0",
    "--workers",
    String(workers),
    "--broker",
    broker,
    "--nats-data-dir",
    dataDir,
    "--log-level",
    "info",
    "--max-connections-per-ip=-1",
    "--connect-rate-per-ip=-1",
    "--frame-rate=-1",
    "--publish-rate=-1",
  ]);
  const port = await until(
    () => {
      if (p.child.exitCode !== null) throw new Error(`gateway exited ${p.child.exitCode}: ${p.out().slice(-2000)}`);
      const m = /"port":(\d+)[^\n]*"msg":"gateway ready"/.exec(p.out());
      return m ? Number(m[1]) : undefined;
    },
    60_000,
    "gateway ready",
  );
  return { ...p, port };
}

const CLK_TCK = 100;

/** Every pid of a process tree (the gateway primary, its workers and its embedded broker). */
export function treePids(pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    try {
      for (const t of readFileSync(`/proc/${out[i]}/task/${out[i]}/children`, "utf8").trim().split(/\s+/)) if (t) out.push(Number(t));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** CPU seconds used so far by one process, and its command name. */
function procCpu(pid: number): { comm: string; s: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const close = stat.lastIndexOf(")");
    const comm = stat.slice(stat.indexOf("(") + 1, close);
    const f = stat.slice(close + 2).split(" ");
    return { comm, s: (Number(f[11]) + Number(f[12])) / CLK_TCK };
  } catch {
    return undefined;
  }
}

export type CpuSplit = { gatewayPct: number; brokerPct: number };

/** CPU of the gateway's node processes and of its broker child between `start()` and `end()`, in % of one core. */
export function cpuMeter(rootPid: number): { start(): void; end(): CpuSplit } {
  let t0 = 0;
  let before = new Map<number, number>();
  const sample = (): Map<number, { comm: string; s: number }> => {
    const m = new Map<number, { comm: string; s: number }>();
    for (const pid of treePids(rootPid)) {
      const c = procCpu(pid);
      if (c) m.set(pid, c);
    }
    return m;
  };
  return {
    start() {
      t0 = performance.now();
      before = new Map([...sample()].map(([pid, c]) => [pid, c.s]));
    },
    end() {
      const wallS = (performance.now() - t0) / 1000;
      let gw = 0;
      let br = 0;
      for (const [pid, c] of sample()) {
        const used = c.s - (before.get(pid) ?? 0);
        if (/nats-server|redis-server/.test(c.comm)) br += used;
        else gw += used;
      }
      return { gatewayPct: wallS > 0 ? (gw / wallS) * 100 : 0, brokerPct: wallS > 0 ? (br / wallS) * 100 : 0 };
    },
  };
}

/**
 * CPU of a process tree sampled every `everyMs`, so processes that exit before the end still count (their last
 * sample): split into node processes and brokers (nats-server, redis-server). Pids seen at start() count from
 * there, later ones from zero.
 */
export class TreeCpu {
  private readonly base = new Map<number, number>();
  private readonly last = new Map<number, { comm: string; s: number }>();
  private timer: NodeJS.Timeout | null = null;
  private t0 = 0;
  private t1 = 0;

  constructor(
    private readonly rootPid: number,
    private readonly everyMs = 250,
  ) {}

  start(): this {
    this.t0 = performance.now();
    for (const pid of treePids(this.rootPid)) {
      const c = procCpu(pid);
      if (c) {
        this.base.set(pid, c.s);
        this.last.set(pid, c);
      }
    }
    this.timer = setInterval(() => this.sample(), this.everyMs);
    return this;
  }

  sample(): void {
    for (const pid of treePids(this.rootPid)) {
      const c = procCpu(pid);
      if (c) this.last.set(pid, c);
    }
    this.t1 = performance.now();
  }

  /** Stops sampling; CPU seconds and % of one core of the node processes and of the brokers. */
  end(): { nodeS: number; brokerS: number; wallS: number; nodePct: number; brokerPct: number } {
    this.sample();
    if (this.timer) clearInterval(this.timer);
    let node = 0;
    let broker = 0;
    for (const [pid, c] of this.last) {
      const used = c.s - (this.base.get(pid) ?? 0);
      if (/nats-server|redis-server/.test(c.comm)) broker += used;
      else node += used;
    }
    const wallS = (this.t1 - this.t0) / 1000;
    return { nodeS: node, brokerS: broker, wallS, nodePct: wallS > 0 ? (node / wallS) * 100 : 0, brokerPct: wallS > 0 ? (broker / wallS) * 100 : 0 };
  }
}

/** Resident memory of a process tree in bytes (VmRSS of every process), split like TreeCpu. */
export function treeRss(rootPid: number): { nodeB: number; brokerB: number } {
  let node = 0;
  let broker = 0;
  for (const pid of treePids(rootPid)) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      const kb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      const comm = /^Name:\s+(\S+)/m.exec(status)?.[1] ?? "";
      if (/nats-server|redis-server/.test(comm)) broker += kb * 1024;
      else node += kb * 1024;
    } catch {
      // exited meanwhile
    }
  }
  return { nodeB: node, brokerB: broker };
}
