import type { SharedStateApi } from "../broker/broker.js";
import type { Logger } from "../log.js";
import type { Service } from "../services/services.js";
import { WarnEvery } from "../util/warn-every.js";

/**
 * This instance's share of the cluster's channels and presence users (a once-per-instance service): its
 * workers report each key's 0↔1 transitions (events/tally.ts, over IPC), and a key held by any worker is
 * one share in the shared state, written when the first worker holds it and deleted when the last lets
 * go (or exits). A write that failed is done again at the next heartbeat; every share is written again
 * when the heartbeat had expired (the leader dropped them).
 */
export class InstanceShares implements Service {
  readonly name = "instance-shares";
  /** Per key, the workers (ids) holding it. */
  private readonly keys = new Map<string, Set<number>>();
  private readonly retry = new Set<string>();
  private stopped = false;
  private readonly warnings: WarnEvery;

  constructor(
    private readonly state: SharedStateApi,
    private readonly instance: string,
    private readonly log: Logger,
  ) {
    this.warnings = new WarnEvery(log, 10_000, "what");
  }

  async start(): Promise<void> {
    this.stopped = false;
  }

  async stop(): Promise<void> {
    this.stopped = true;
  }

  /** A worker's first holder of `key` came (`held`), or its last went. */
  report(worker: number, key: string, held: boolean): void {
    const workers = this.keys.get(key) ?? new Set<number>();
    const before = workers.size;
    if (held) workers.add(worker);
    else workers.delete(worker);
    if (workers.size > 0) this.keys.set(key, workers);
    else this.keys.delete(key);
    if ((before === 0) !== (workers.size === 0)) this.write(key);
  }

  /** A worker exited (a crash): what it held is let go. */
  workerGone(worker: number): void {
    for (const [key, workers] of [...this.keys]) if (workers.has(worker)) this.report(worker, key, false);
  }

  /** Each heartbeat: writes again what failed, and everything when the heartbeat had expired. */
  beat(renewed: boolean): void {
    if (renewed) for (const key of this.keys.keys()) this.retry.add(key);
    const keys = [...this.retry];
    this.retry.clear();
    for (const key of keys) this.write(key);
  }

  private write(key: string): void {
    if (this.stopped) return;
    const held = this.keys.has(key);
    this.log.debug({ key, held }, "instance share written");
    this.state.share(key, this.instance, held).catch((e: unknown) => {
      this.retry.add(key);
      this.warnings.warn("share", { err: e }, "an instance's share could not be written; written again with the next heartbeat");
    });
  }
}
