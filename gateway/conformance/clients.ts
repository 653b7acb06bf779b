// Clients-under-test as processes (README.md "The line protocol"), and the pool that keeps an adapter process
// alive across scenarios when the adapter says it can forget a scenario (`reset`, README.md "Reuse").
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";

export type ClientEvent = Record<string, unknown> & { event: string };
export type Reply = { id: number; ok: boolean; result?: Record<string, unknown>; error?: { code: string; temporary: boolean; message?: string } };

/** How to start a client-under-test: a program and its arguments (no shell), and its working directory. */
export type ClientCommand = { command: string; args: string[]; cwd?: string };

/** The line an adapter that can play many scenarios writes first. */
export const RESET_CAPABILITY = { event: "adapter", reset: true } as const;
/** How long a `reset` may take (every client closed) before the process is discarded. */
export const RESET_TIMEOUT_MS = 10_000;

/** A client-under-test process: commands in, replies and events out, one JSON object per line. */
export class ClientProcess {
  readonly events: ClientEvent[] = [];
  /** When each of `events` arrived (ms since the epoch). */
  readonly arrivals: number[] = [];
  /** stdout lines that are not protocol lines: each fails the scenario. */
  readonly violations: string[] = [];
  /** The adapter's first line was RESET_CAPABILITY: it answers `reset` and can be kept for the next scenario. */
  canReset = false;
  private readonly proc: ChildProcess;
  private readonly waiting = new Map<number, (r: Reply | Error) => void>();
  private nextId = 1;
  private stderr = "";
  private lines = 0;
  /** The id of the `reset` in flight: once its answer is read, the process is idle. */
  private resetId: number | undefined;
  /** Set when a `reset` was answered: any line that comes while no scenario holds the process spoils it. */
  private idle = false;
  private spoiled = false;
  /** `close` was sent: the adapter exits once it has answered, so it is never kept (it might answer a `reset` first). */
  private closing = false;

  constructor({ command, args, cwd }: ClientCommand) {
    this.proc = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"], ...(cwd ? { cwd } : {}) });
    this.proc.on("error", (e) => this.failAll(new Error(`cannot start ${command}: ${e.message}`)));
    // "close", not "exit": a process may exit before its last stdout lines (the answer to `close`) are read.
    this.proc.on("close", (code, signal) => this.failAll(new Error(`the client exited (${signal ?? `code ${code}`}); stderr: ${this.stderr}`)));
    this.proc.stdin!.on("error", () => undefined); // a client that exited: its exit fails what waits
    createInterface({ input: this.proc.stdout! }).on("line", (line) => this.onLine(line));
    this.proc.stderr!.on("data", (d: Buffer) => (this.stderr = (this.stderr + d.toString()).slice(-4_000)));
  }

  /** Sends a command and resolves with its reply. */
  send(cmd: Record<string, unknown>, timeoutMs = 20_000): Promise<Reply> {
    const id = this.nextId++;
    if (cmd.cmd === "close") this.closing = true;
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no reply to ${JSON.stringify(cmd)} in ${timeoutMs} ms; stderr: ${this.stderr}`)), timeoutMs);
      this.waiting.set(id, (r) => {
        clearTimeout(t);
        this.waiting.delete(id);
        if (r instanceof Error) reject(r);
        else resolve(r);
      });
      this.proc.stdin!.write(`${JSON.stringify({ ...cmd, id })}\n`);
    });
  }

  /** Running, every command answered, no stray line: a `reset` may make it as good as new. */
  get clean(): boolean {
    return this.alive && !this.closing && this.waiting.size === 0 && this.violations.length === 0 && !this.spoiled;
  }

  /**
   * Asks the adapter to close every client it made and forget the scenario; true when it answered ok in time
   * and the process is clean, its events cleared for the next scenario.
   */
  async reset(timeoutMs = RESET_TIMEOUT_MS): Promise<boolean> {
    if (!this.canReset || !this.clean) return false;
    this.resetId = this.nextId;
    const r = await this.send({ cmd: "reset" }, timeoutMs).catch(() => undefined);
    this.resetId = undefined;
    if (!r?.ok || !this.clean) return false;
    this.events.length = 0;
    this.arrivals.length = 0;
    return true;
  }

  /** Hands a reset process to a new scenario; false when something came from it while it was idle. */
  take(): boolean {
    this.idle = false;
    return this.clean;
  }

  async stop(): Promise<void> {
    if (!this.alive) return;
    const exited = new Promise((r) => this.proc.once("exit", r));
    await this.send({ cmd: "close" }, 5_000).catch(() => undefined);
    const t = setTimeout(() => this.proc.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(t);
  }

  private get alive(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null && this.proc.pid !== undefined;
  }

  private onLine(line: string): void {
    const first = this.lines++ === 0;
    if (this.idle) this.spoiled = true;
    let o: unknown;
    try {
      o = JSON.parse(line);
    } catch {
      o = undefined;
    }
    if (!o || typeof o !== "object" || Array.isArray(o)) return void this.violations.push(line.slice(0, 200));
    const cap = o as Record<string, unknown>;
    if (first && cap.event === RESET_CAPABILITY.event && cap.reset === true) this.canReset = true;
    else if ("event" in o) {
      this.events.push(o as ClientEvent);
      this.arrivals.push(Date.now());
    } else if (typeof (o as Reply).id === "number" && this.waiting.has((o as Reply).id)) {
      if ((o as Reply).id === this.resetId) this.idle = true;
      this.waiting.get((o as Reply).id)!(o as Reply);
    } else this.violations.push(line.slice(0, 200));
  }

  private failAll(e: Error): void {
    for (const w of [...this.waiting.values()]) w(e);
  }
}

/**
 * The adapter processes of one suite. A scenario takes its clients from here and gives them back at its end:
 * after a pass, each whose adapter announced `reset` and answers it is kept for the next scenario; after a
 * failure, or from an adapter without `reset`, each is closed, so the next scenario starts a fresh one.
 */
export class ClientPool {
  /** Processes started so far. */
  started = 0;
  private readonly idle: ClientProcess[] = [];
  private readonly stopping: Promise<void>[] = [];

  constructor(
    readonly command: ClientCommand,
    private readonly options: { reuse?: boolean; resetTimeoutMs?: number } = {},
  ) {}

  /** A reset process when one is idle and clean, else a new one. */
  take(): ClientProcess {
    for (let c = this.idle.pop(); c; c = this.idle.pop()) {
      if (c.take()) return c;
      this.stopping.push(c.stop());
    }
    this.started++;
    return new ClientProcess(this.command);
  }

  /** Gives a scenario's clients back: kept when `passed` and their `reset` succeeds, closed otherwise. */
  async release(clients: readonly ClientProcess[], passed: boolean): Promise<void> {
    await Promise.all(
      clients.map(async (c) => {
        if (this.options.reuse !== false && passed && (await c.reset(this.options.resetTimeoutMs))) this.idle.push(c);
        else await c.stop();
      }),
    );
  }

  /** Closes every idle process. */
  async close(): Promise<void> {
    await Promise.all([...this.idle.splice(0).map((c) => c.stop()), ...this.stopping.splice(0)]);
  }
}
