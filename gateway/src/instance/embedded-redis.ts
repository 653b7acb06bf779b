import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ProcessError } from "../errors.js";
import type { Logger } from "../log.js";
import { freePort, redisPing, stopChild, tieToThisProcess } from "../net.js";

export type EmbeddedRedisOptions = { bin?: string; log: Logger };

const START_TIMEOUT_MS = 10_000;

/**
 * A redis-server child for `--broker redis` without REDIS_URL: loopback, a free port, no persistence
 * (`--save '' --appendonly no`), ready once it answers PING. Restarted on the same port if it dies while
 * the gateway runs (pub/sub keeps nothing, so a restart loses only what was in flight).
 */
export class EmbeddedRedis {
  private child?: ChildProcess;
  private port = -1;
  private dir?: string;
  private stopping = false;
  private restarts = 0;

  constructor(private readonly opts: EmbeddedRedisOptions) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async start(): Promise<void> {
    const dir = (this.dir ??= mkdtempSync(join(tmpdir(), "fgw-embedded-redis-")));
    const fixed = this.port > 0;
    for (let attempt = 0; ; attempt++) {
      if (!fixed) this.port = await freePort();
      try {
        await this.spawnOnce(dir);
        break;
      } catch (e) {
        // Another process took the port between our probe and redis-server's bind: pick another.
        if (fixed || attempt >= 4 || !/already in use/i.test((e as Error).message)) throw e;
      }
    }
    this.opts.log.info({ url: this.url, redisPid: this.child?.pid }, "embedded redis-server ready");
  }

  private async spawnOnce(dir: string): Promise<void> {
    const bin = this.opts.bin ?? "redis-server";
    const args = ["--port", String(this.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--maxclients", "100000"];
    // Out of the gateway's process group, as the embedded nats-server: the primary stops it after the workers.
    const child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"], detached: true });
    this.child = child;
    let out = "";
    const collect = (d: Buffer): void => {
      out = (out + d.toString()).slice(-2000);
    };
    child.stdout?.on("data", collect);
    child.stderr?.on("data", collect);
    await new Promise<void>((res, rej) => {
      child.once("spawn", () => res());
      child.once("error", (e) =>
        rej(new ProcessError("ERR_EMBEDDED_REDIS", `cannot start ${bin}: ${e.message} (install redis-server, or set REDIS_URL)`, { cause: e })),
      );
    });
    // Stops the server even if this process is SIGKILLed.
    tieToThisProcess(child);
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!(await redisPing(this.port))) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new ProcessError("ERR_EMBEDDED_REDIS", `embedded redis-server exited with ${child.exitCode ?? child.signalCode}: ${out.trim().slice(-500)}`);
      if (Date.now() > deadline) {
        child.kill("SIGKILL");
        throw new ProcessError(
          "ERR_EMBEDDED_REDIS",
          `embedded redis-server did not answer PING within ${START_TIMEOUT_MS / 1000} s: ${out.trim().slice(-500)}`,
        );
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    child.once("exit", (code, signal) => this.onExit(child, code, signal, out));
  }

  private onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null, out: string): void {
    if (this.stopping || child !== this.child) return;
    this.restarts++;
    const delay = Math.min(100 * 2 ** Math.min(this.restarts, 8), 30_000);
    this.opts.log.error({ code, signal, output: out.trim().slice(-500), restartInMs: delay }, "embedded redis-server exited; restarting it");
    setTimeout(() => {
      if (this.stopping) return;
      this.start().catch((e) => this.opts.log.error({ err: e }, "embedded redis-server restart failed"));
    }, delay).unref();
  }

  /** Stops the server (SIGTERM, then SIGKILL after `timeoutMs`) and removes its directory. */
  async stop(timeoutMs = 5_000): Promise<void> {
    this.stopping = true;
    await stopChild(this.child, timeoutMs);
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }
}
