// What the multi-node NATS launchers (nats-cluster.ts, nats-supercluster.ts) share: ports picked at run time
// (bind 0, release) with a start retried when it loses a port race, one nats-server process per node that can
// be killed, stopped and launched again, and the monitoring endpoint's answers.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type AddressInfo, type Server } from "node:net";
import { NATS_SERVER_BIN } from "./nats-server.js";

/** How many times a start that lost a port race (another process took a picked port first) is tried. */
const START_ATTEMPTS = 3;

/** Reserves `count` distinct free TCP ports on 127.0.0.1 (held together, then released). */
export async function pickFreePorts(count: number): Promise<number[]> {
  const held = await holdFreePorts(count);
  await held.release();
  return held.ports;
}

/**
 * Holds `count` distinct free TCP ports on 127.0.0.1 until `release`: a launcher that opens listeners of its
 * own on port 0 (link proxies) does so while they are held, so the kernel cannot hand it one of them.
 */
export async function holdFreePorts(count: number): Promise<{ ports: number[]; release(): Promise<void> }> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Server>((res, rej) => {
          const s = createServer();
          s.once("error", rej);
          s.listen(0, "127.0.0.1", () => res(s));
        }),
    ),
  );
  return {
    ports: servers.map((s) => (s.address() as AddressInfo).port),
    release: async () => void (await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))))),
  };
}

/**
 * Runs `tryStart` (which picks its ports with `pickFreePorts`) up to 3 times while it fails with "address
 * already in use": a port picked and released can be taken by another process before nats-server binds it.
 * Any other failure is thrown at once.
 */
export async function startWithPortRetry<T>(tryStart: () => Promise<T>): Promise<T> {
  let lastErr: unknown;
  for (let attempt = 0; attempt < START_ATTEMPTS; attempt++) {
    try {
      return await tryStart();
    } catch (e) {
      lastErr = e;
      if (!(e instanceof Error && /address already in use/i.test(e.message))) throw e;
    }
  }
  throw lastErr;
}

/** GET a monitoring endpoint as JSON; undefined when the node does not answer (2 s). */
export async function getJson<T>(url: string): Promise<T | undefined> {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    return r.ok ? ((await r.json()) as T) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the node's monitoring port answers `/healthz` with 2xx (2 s). */
export async function healthy(monitorPort: number): Promise<boolean> {
  try {
    return (await fetch(`http://127.0.0.1:${monitorPort}/healthz`, { signal: AbortSignal.timeout(2_000) })).ok;
  } catch {
    return false;
  }
}

/** One node's nats-server process, launched again on the same configuration after a stop. */
export type NatsProcess = {
  /** The current process (undefined before the first launch). */
  readonly child: ChildProcess | undefined;
  /** True while the process runs. */
  readonly running: boolean;
  /** Spawns nats-server with the configuration file and environment (the last 4,000 characters of stderr kept). */
  launch(): void;
  /** Why the process is not running: its exit code or signal and stderr's tail. */
  exitedError(): Error;
  /** Sends `signal`, then SIGKILL after 5 s; resolves once it exited (at once when it does not run). */
  stop(signal: NodeJS.Signals): Promise<void>;
};

/** A nats-server process for `label` (named in errors) started with `-c conf` and `env`. */
export function natsProcess(label: string, conf: string, env: NodeJS.ProcessEnv): NatsProcess {
  let child: ChildProcess | undefined;
  let stderr = "";
  const running = () => child !== undefined && child.exitCode === null && child.signalCode === null;
  return {
    get child() {
      return child;
    },
    get running() {
      return running();
    },
    launch() {
      stderr = "";
      child = spawn(NATS_SERVER_BIN, ["-c", conf], { env, stdio: ["ignore", "ignore", "pipe"] });
      child.stderr?.on("data", (d: Buffer) => {
        stderr = (stderr + d.toString()).slice(-4000);
      });
    },
    exitedError: () => new Error(`nats-server ${label} exited ${child?.exitCode ?? child?.signalCode}: ${stderr}`),
    async stop(signal) {
      const c = child;
      if (!c || !running()) return;
      const gone = new Promise<void>((r) => c.once("exit", () => r()));
      c.kill(signal);
      const t = setTimeout(() => c.kill("SIGKILL"), 5_000);
      await gone;
      clearTimeout(t);
    },
  };
}
