import cluster, { type Worker } from "node:cluster";
import { WORKER_CONFIG_ENV, WORKER_SLOT_ENV, type Config } from "../config/config.js";
import { secretsOf, withoutSecrets } from "../config/secrets.js";
import type { ServerSection } from "../config/sections/index.js";
import type { Logger } from "../log.js";
import type { InstanceMetrics } from "./instance-metrics.js";
import { isFgwMessage, type ToPrimary, type ToWorker } from "./ipc.js";
import { forwardWorkerStderr } from "./worker-stderr.js";
import { forkInWaves, ListeningCount } from "./waves.js";

const MAX_BACKOFF_MS = 30_000;
const STABLE_AFTER_MS = 30_000;

/**
 * The worker processes: forked with the resolved config, restarted with exponential backoff after a crash
 * (reset once a worker lived STABLE_AFTER_MS), answering their metric requests, and drained at shutdown.
 * Each has a slot, 1..WORKERS, its number in logs and /v1/stats: a restarted worker takes the slot of the one
 * it replaces (node's cluster ids, which never repeat, stay the keys inside the primary).
 */
export class WorkerPool {
  private booted = false;
  private stopping = false;
  private failures = 0;
  private readonly startedAt = new Map<number, number>();
  /** Each live worker's slot, by cluster id. */
  private readonly slots = new Map<number, number>();
  /** Where the workers' channel and user transitions go (events/shares.ts), when cluster-wide events are on. */
  private shares?: { report(worker: number, key: string, held: boolean): void; workerGone(worker: number): void };

  constructor(
    private readonly config: Pick<ServerSection, "workers" | "restartBackoffMs" | "workerStartWave">,
    /** What each worker is started with (every URL and port resolved). */
    private readonly workerConfig: Config,
    private readonly metrics: InstanceMetrics,
    private readonly log: Logger,
    /** A worker died before every worker was listening: startup failed. */
    private readonly onBootFailure: (e: Error) => void,
    /** The embedded nats-server's token, sent to each worker with the secrets. */
    private readonly natsToken?: string,
  ) {}

  /** Forks every worker, WORKER_START_WAVE at a time (waves.ts), and resolves once all of them listen. */
  async start(): Promise<void> {
    // A worker's stderr passes through the primary, which drops uWS.js's cork warning (instance/worker-stderr.ts).
    cluster.setupPrimary({ args: [], stdio: ["inherit", "inherit", "pipe", "ipc"] });
    cluster.on("message", (worker, m: unknown) => {
      if (isFgwMessage(m) && (m as ToPrimary).type === "fgw:listening") this.listening(worker);
      if (isFgwMessage(m) && (m as ToPrimary).type === "fgw:secrets-req")
        send(worker, { type: "fgw:secrets", secrets: secretsOf(this.workerConfig, this.natsToken) });
      if (isFgwMessage(m) && (m as ToPrimary).type === "fgw:metrics-req") this.answerMetrics(worker, m as ToPrimary & { type: "fgw:metrics-req" });
      if (isFgwMessage(m) && (m as ToPrimary).type === "fgw:share") {
        const r = m as ToPrimary & { type: "fgw:share" };
        this.shares?.report(worker.id, r.key, r.held);
      }
      if (isFgwMessage(m) && (m as ToPrimary).type === "fgw:scrape-res") this.metrics.onScrapeResponse(worker, m as ToPrimary & { type: "fgw:scrape-res" });
    });
    cluster.on("exit", (worker, code, signal) => this.exited(worker, code, signal));
    const listening = new ListeningCount();
    cluster.on("message", (_w, m: unknown) => {
      if (isFgwMessage(m) && (m as ToPrimary).type === "fgw:listening" && !this.booted) listening.mark();
    });
    const t0 = Date.now();
    await forkInWaves(
      this.config.workers,
      this.config.workerStartWave,
      (slot) => this.fork(slot),
      (n) => listening.atLeast(n),
    );
    this.log.info({ workers: this.config.workers, wave: this.config.workerStartWave, ms: Date.now() - t0 }, "workers listening");
    this.booted = true;
    // /readyz answers 200 from now on: a load balancer sends nothing before every worker can take it.
    for (const w of Object.values(cluster.workers ?? {})) if (w) send(w, { type: "fgw:all-ready" });
  }

  /** A worker listens: scrapes include it from now on; after startup (a restart) it is told at once that all are ready. */
  private listening(worker: Worker): void {
    this.metrics.workerListening(worker.id);
    if (this.booted) send(worker, { type: "fgw:all-ready" });
    // A worker that starts (or restarts) while the stream is drifted is told at once.
    if (this.drift.length > 0) send(worker, { type: "fgw:drift", drift: [...this.drift] });
  }

  private fork(slot: number): Worker {
    // Secrets stay out of the worker's environment (/proc/<pid>/environ): it asks for them over IPC.
    const w = cluster.fork({ [WORKER_CONFIG_ENV]: JSON.stringify(withoutSecrets(this.workerConfig)), [WORKER_SLOT_ENV]: String(slot) });
    this.startedAt.set(w.id, Date.now());
    this.slots.set(w.id, slot);
    this.metrics.workerStarted(w.id, slot);
    if (w.process.stderr) forwardWorkerStderr(w.process.stderr, process.stderr);
    return w;
  }

  private answerMetrics(worker: Worker, { id, what }: ToPrimary & { type: "fgw:metrics-req" }): void {
    const answer = what === "stats" ? this.metrics.stats().then((text) => ({ text, contentType: "application/json" })) : this.metrics.text();
    answer.then(
      (m) => send(worker, { type: "fgw:metrics-res", id, text: m.text, contentType: m.contentType }),
      (e) => send(worker, { type: "fgw:metrics-res", id, error: (e as Error).message }),
    );
  }

  /** Sends the workers' share reports to `sink` (set before start). */
  shareWith(sink: NonNullable<WorkerPool["shares"]>): void {
    this.shares = sink;
  }

  private exited(worker: Worker, code: number, signal: string): void {
    const slot = this.slots.get(worker.id) ?? worker.id;
    this.slots.delete(worker.id);
    this.metrics.workerGone(worker.id);
    this.shares?.workerGone(worker.id);
    if (this.stopping) return;
    if (!this.booted) return this.onBootFailure(new Error(`worker ${slot} exited during startup (code ${code}, signal ${signal}); see its log above`));
    const lived = Date.now() - (this.startedAt.get(worker.id) ?? 0);
    this.startedAt.delete(worker.id);
    this.failures = lived > STABLE_AFTER_MS ? 0 : this.failures + 1;
    const delay = Math.min(this.config.restartBackoffMs * 2 ** Math.max(this.failures - 1, 0), MAX_BACKOFF_MS);
    this.metrics.restarts.inc();
    // `workerPid`: the line's own `pid` is the primary's.
    this.log.error({ worker: slot, workerPid: worker.process.pid, code, signal, restartInMs: delay }, "worker exited; restarting");
    setTimeout(() => {
      if (!this.stopping) this.fork(slot);
    }, delay);
  }

  private drift: readonly string[] = [];

  /** Tells every worker what of the stream's setup has drifted (and each worker that starts later). */
  setDrift(drift: readonly string[]): void {
    this.drift = drift;
    for (const w of Object.values(cluster.workers ?? {})) if (w) send(w, { type: "fgw:drift", drift: [...drift] });
  }

  /** Asks every worker to drain; kills those still running after `budgetMs`. */
  async stop(budgetMs: number): Promise<void> {
    this.stopping = true;
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => !!w);
    const exited = Promise.all(workers.map((w) => new Promise<void>((r) => (w.isDead() ? r() : w.once("exit", () => r())))));
    for (const w of workers) send(w, { type: "fgw:shutdown" });
    const timedOut = await Promise.race([exited.then(() => false), delay(budgetMs).then(() => true)]);
    if (!timedOut) return;
    this.log.warn("workers did not finish draining in time; killing them");
    for (const w of workers) if (!w.isDead()) w.process.kill("SIGKILL");
  }
}

function send(w: Worker, m: ToWorker): void {
  if (w.isConnected()) w.send(m);
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());
