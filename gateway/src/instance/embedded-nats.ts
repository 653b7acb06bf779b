import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ProcessError } from "../errors.js";
import type { Logger } from "../log.js";
import { stopChild, tieToThisProcess } from "../net.js";
import { connect } from "@nats-io/transport-node";
import {
  encryptionConfig,
  STORE_KEY_ENV,
  storeKeyEnvValue,
  unloadedStreams,
  unreadableStoreError,
  type StoreCipher,
} from "../broker/jetstream/store-encryption.js";

export type EmbeddedNatsOptions = {
  bin: string;
  dataDir: string;
  log: Logger;
  /** Encrypts the JetStream store with the key in this file (NATS_STORE_KEY_FILE). */
  storeKeyFile?: string;
  storeCipher?: StoreCipher;
};

/**
 * A nats-server child with JetStream for the zero-config default. It listens on loopback on a free port,
 * and is restarted on the same port if it dies while the gateway runs. It takes only clients that give the
 * token made here, once per gateway start: other processes of the host cannot use the control subjects or
 * the JetStream API. The token is in a config file of mode 0600 (in a directory of mode 0700, removed once
 * the server is up), never on a command line; the workers get it from the primary over IPC.
 */
export class EmbeddedNats {
  /** The clients' token (nats.js `tokenAuthenticator`). */
  readonly token = randomBytes(32).toString("base64url");
  private child?: ChildProcess;
  private port = -1;
  private stopping = false;
  private restarts = 0;

  constructor(private readonly opts: EmbeddedNatsOptions) {}

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async start(): Promise<void> {
    const storeDir = resolve(this.opts.dataDir);
    mkdirSync(storeDir, { recursive: true });
    const portsDir = mkdtempSync(join(tmpdir(), "fgw-embedded-nats-"));
    const args = ["-a", "127.0.0.1", "-p", String(this.port), "-js", "-sd", storeDir, "--ports_file_dir", portsDir, "-n", "fanout-gateway-embedded"];
    let env: NodeJS.ProcessEnv | undefined;
    // The store key goes through the environment, never the command line; the config file only refers to it.
    const cipher = this.opts.storeKeyFile ? encryptionConfig(this.opts.storeCipher ?? "chachapoly") : "";
    if (this.opts.storeKeyFile) env = { ...process.env, [STORE_KEY_ENV]: storeKeyEnvValue(this.opts.storeKeyFile) };
    const conf = join(portsDir, "embedded.conf");
    writeFileSync(conf, `authorization { token: "${this.token}" }\n${cipher}`, { mode: 0o600 });
    args.push("-c", conf);
    // A process group of its own: a terminal's Ctrl-C (SIGINT to the gateway's group) must not stop it under
    // the draining workers, which still store their sockets' last events; the primary stops it last.
    const child = spawn(this.opts.bin, args, { stdio: ["ignore", "ignore", "pipe"], env, detached: true });
    this.child = child;
    let stderr = "";
    child.stderr?.on("data", (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-2000);
    });
    const spawned = new Promise<void>((res, rej) => {
      child.once("spawn", () => res());
      child.once("error", (e) =>
        rej(new ProcessError("ERR_EMBEDDED_NATS", `cannot start ${this.opts.bin}: ${e.message} (run npm run setup, or set NATS_URL)`, { cause: e })),
      );
    });
    await spawned;
    // Stops the server even if this process is SIGKILLed (it is not one of the cluster's workers).
    tieToThisProcess(child);
    try {
      this.port = await this.waitForPort(portsDir, () => stderr);
    } finally {
      rmSync(portsDir, { recursive: true, force: true });
    }
    try {
      await this.checkStore(storeDir);
    } catch (e) {
      await this.stop();
      throw e;
    }
    child.once("exit", (code, signal) => this.onExit(child, code, signal, stderr));
    const encryption = this.opts.storeKeyFile ? (this.opts.storeCipher ?? "chachapoly") : "off";
    this.opts.log.info({ url: this.url, storeDir, natsPid: child.pid, encryption }, "embedded nats-server ready");
  }

  /**
   * Every stream in the store must have been loaded. One the server could not decrypt (a wrong key, or none)
   * is skipped with a warning — and creating it again would replace its files — so the gateway stops here.
   */
  private async checkStore(storeDir: string): Promise<void> {
    // A single server restores its streams inside EnableJetStream, before it writes the ports file we waited on.
    if (unloadedStreams(storeDir, []).length === 0) return;
    const nc = await connect({ servers: this.url, name: "fanout-gateway-store-check", token: this.token });
    try {
      const r = (await nc.request("$JS.API.STREAM.NAMES", "{}", { timeout: 10_000 })).json<{ streams?: string[] | null }>();
      const err = unreadableStoreError(storeDir, unloadedStreams(storeDir, r.streams ?? []), !!this.opts.storeKeyFile);
      if (err) throw err;
    } finally {
      await nc.close();
    }
  }

  private async waitForPort(portsDir: string, stderr: () => string): Promise<number> {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      if (this.child?.exitCode !== null && this.child?.exitCode !== undefined) {
        throw new ProcessError("ERR_EMBEDDED_NATS", `embedded nats-server exited with ${this.child.exitCode}: ${stderr().trim()}`);
      }
      const f = readdirSync(portsDir).find((n) => n.endsWith(".ports"));
      if (f) {
        try {
          const ports = JSON.parse(readFileSync(join(portsDir, f), "utf8")) as { nats?: string[] };
          const url = ports.nats?.[0];
          if (url !== undefined) return Number(new URL(url.replace(/^nats:/, "http:")).port);
        } catch {
          // written but not complete yet
        }
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new ProcessError("ERR_EMBEDDED_NATS", `embedded nats-server did not start within 20 s: ${stderr().trim()}`);
  }

  private onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null, stderr: string): void {
    if (this.stopping || child !== this.child) return;
    this.restarts++;
    const delay = Math.min(250 * 2 ** Math.min(this.restarts, 7), 30_000);
    this.opts.log.error({ code, signal, stderr: stderr.trim().slice(-500), restartInMs: delay }, "embedded nats-server exited; restarting it");
    setTimeout(() => {
      if (this.stopping) return;
      this.start().catch((e) => this.opts.log.error({ err: e }, "embedded nats-server restart failed"));
    }, delay).unref();
  }

  /** Stops the server (SIGTERM, then SIGKILL after `timeoutMs`). */
  async stop(timeoutMs = 5_000): Promise<void> {
    this.stopping = true;
    await stopChild(this.child, timeoutMs);
  }
}
