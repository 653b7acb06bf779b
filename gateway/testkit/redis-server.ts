// Starts a real redis-server for a test suite. Redis needs a fixed port, so one is picked by binding
// port 0 and releasing it (retried if another process takes it first); readiness is polled with PING.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitFor } from "./wait.js";
import { freePort, redisPing } from "../src/net.js";

export { freePort };

export const REDIS_SERVER_BIN = process.env.REDIS_SERVER_BIN ?? "redis-server";

export type RedisServerHandle = {
  port: number;
  /** redis://127.0.0.1:PORT */
  url: string;
  process: ChildProcess;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s) and removes its temp dir. */
  stop(): Promise<void>;
};

export async function startRedisServer(opts: { extraArgs?: string[] } = {}): Promise<RedisServerHandle> {
  const dir = mkdtempSync(join(tmpdir(), "fgw-redis-"));
  let lastErr = "";
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const child = spawn(
      REDIS_SERVER_BIN,
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, ...(opts.extraArgs ?? [])],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    const collect = (d: Buffer): void => {
      out = (out + d.toString()).slice(-4000);
    };
    child.stdout!.on("data", collect);
    child.stderr!.on("data", collect);
    try {
      await waitFor(
        async () => {
          if (child.exitCode !== null) throw new Error(`redis-server exited ${child.exitCode}: ${out}`);
          return (await redisPing(port)) || undefined;
        },
        { timeoutMs: 10_000, what: `redis-server PONG on ${port}` },
      );
    } catch (e) {
      lastErr = String(e);
      child.kill("SIGKILL");
      if (/already in use/i.test(out)) continue; // lost the port race: pick another
      rmSync(dir, { recursive: true, force: true });
      throw e;
    }
    const exited = new Promise<void>((r) => {
      if (child.exitCode !== null || child.signalCode !== null) r();
      else child.once("exit", () => r());
    });
    return {
      port,
      url: `redis://127.0.0.1:${port}`,
      process: child,
      async stop() {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill("SIGTERM");
          const t = setTimeout(() => child.kill("SIGKILL"), 5_000);
          await exited;
          clearTimeout(t);
        }
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  rmSync(dir, { recursive: true, force: true });
  throw new Error(`could not start redis-server: ${lastErr}`);
}
