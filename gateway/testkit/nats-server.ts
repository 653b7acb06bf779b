// The test kit's nats-server: the project's pinned build on ephemeral ports with a temp JetStream store, in
// the manner of nats.js' nst launcher (port -1, ports file, readiness by polling /healthz). Used by the tests,
// the benchmarks (compiled with them, see tsconfig.json) and the load tools' tests.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, existsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { waitFor } from "./wait.js";
import { PACKAGE_ROOT } from "../src/config/config.js";

export const NATS_SERVER_BIN = process.env.NATS_SERVER_BIN ?? resolve(PACKAGE_ROOT, ".tools/bin/nats-server");

export type NatsServerHandle = {
  url: string;
  port: number;
  monitorPort: number;
  storeDir: string;
  process: ChildProcess;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s). */
  stop(): Promise<void>;
  /** Kills the server with SIGKILL at once. */
  kill(): Promise<void>;
  /** Starts it again on the same ports and store (after stop/kill). */
  restart(): Promise<void>;
};

type Ports = { nats: string[]; monitoring?: string[] };

export async function startNatsServer(opts: { extraArgs?: string[]; config?: string } = {}): Promise<NatsServerHandle> {
  const dir = mkdtempSync(join(tmpdir(), "fgw-nats-"));
  const storeDir = join(dir, "store");
  let port = -1;
  let monitorPort = -1;
  let child!: ChildProcess;

  const launch = async (): Promise<void> => {
    const portsDir = mkdtempSync(join(dir, "ports-"));
    const args = [
      "-a",
      "127.0.0.1",
      "-p",
      String(port),
      "-m",
      String(monitorPort),
      "-js",
      "-sd",
      storeDir,
      "--ports_file_dir",
      portsDir,
      ...(opts.extraArgs ?? []),
    ];
    if (opts.config) {
      const cfg = join(dir, "server.conf");
      writeFileSync(cfg, opts.config);
      args.push("-c", cfg);
    }
    child = spawn(NATS_SERVER_BIN, args, { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr?.on("data", (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-4000);
    });
    const ports = await waitFor<Ports>(
      () => {
        if (child.exitCode !== null) throw new Error(`nats-server exited ${child.exitCode}: ${stderr}`);
        const f = readdirSync(portsDir).find((n) => n.endsWith(".ports"));
        if (!f) return undefined;
        try {
          return JSON.parse(readFileSync(join(portsDir, f), "utf8")) as Ports;
        } catch {
          return undefined;
        }
      },
      { timeoutMs: 15_000, what: "nats-server ports file" },
    );
    port = Number(new URL(ports.nats[0]!.replace("nats://", "http://")).port);
    monitorPort = Number(new URL(ports.monitoring![0]!).port);
    await waitFor(
      async () => {
        try {
          const r = await fetch(`http://127.0.0.1:${monitorPort}/healthz?js-enabled-only=true`);
          return r.ok ? true : undefined;
        } catch {
          return undefined;
        }
      },
      { timeoutMs: 15_000, what: "nats-server healthz" },
    );
  };

  const stopWith = async (signal: NodeJS.Signals): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    child.kill(signal);
    const t = setTimeout(() => child.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(t);
  };

  await launch();
  const handle: NatsServerHandle = {
    get url() {
      return `nats://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    get monitorPort() {
      return monitorPort;
    },
    storeDir,
    get process() {
      return child;
    },
    stop: () => stopWith("SIGTERM"),
    kill: () => stopWith("SIGKILL"),
    restart: launch,
  } as NatsServerHandle;
  const cleanup = handle.stop;
  handle.stop = async () => {
    await cleanup();
    if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
  };
  return handle;
}
