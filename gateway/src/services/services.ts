import client from "prom-client";
import type { SharedStateApi } from "../broker/broker.js";
import type { Logger } from "../log.js";
import { WarnEvery } from "../util/warn-every.js";
import type { LeaderLease } from "./leader-lease.js";

/**
 * A service that runs in the primary, beside the workers (docs/architecture.md, "a once-per-deployment
 * service"): once per instance, or once per deployment (only while this instance holds the leader's lease).
 */
export interface Service {
  readonly name: string;
  start(): Promise<void>;
  /** Stops; a once-per-deployment service may be started again later (when the lease comes back). */
  stop(): Promise<void>;
  /**
   * Called at each heartbeat (a once-per-instance service): `renewed` when it had expired (the leader
   * dropped what the instance wrote: write it again).
   */
  beat?(renewed: boolean): void;
}

/**
 * The primary's services and the two things they stand on, both kept by one timer (every third of the
 * TTL): the instance's heartbeat (the cluster counts an instance gone when it expires), and the leader's
 * lease (leader-lease.ts; its holder runs the once-per-deployment services; when it dies, the lease expires and another
 * instance takes it within a third of the TTL more).
 */
export class Services {
  private timer?: NodeJS.Timeout;
  private leading = false;
  private stopped = false;
  /** Whether a heartbeat of this instance was written since the start. */
  private written = false;
  private readonly warnings: WarnEvery;
  private readonly lapses?: client.Counter;

  constructor(
    private readonly state: SharedStateApi,
    private readonly lease: Pick<LeaderLease, "tick" | "release">,
    readonly instance: string,
    private readonly ttlMs: number,
    private readonly perInstance: readonly Service[],
    private readonly perCluster: readonly Service[],
    private readonly log: Logger,
    registry?: client.Registry,
  ) {
    this.warnings = new WarnEvery(log, 10_000, "what");
    if (!registry) return;
    this.lapses = new client.Counter({
      name: "fanout_cluster_heartbeat_lapses_total",
      help: "Times this instance found its heartbeat had expired before it was refreshed (the cluster counted the instance gone for a while: its channels' shares were written again, and channels held and left only meanwhile recorded no events)",
      registers: [registry],
    });
    const leading = (): number => (this.leading ? 1 : 0);
    new client.Gauge({
      name: "fanout_cluster_leader",
      help: "1 while this instance holds the leader's lease and runs the once-per-deployment services (channel.occupied and the like), else 0",
      registers: [registry],
      collect() {
        this.set(leading());
      },
    });
  }

  /**
   * Writes the heartbeat, starts the per-instance services, and tries for the lease. A heartbeat that cannot be
   * written yet (a bucket just made in another region, whose subjects the local servers do not route yet: no
   * responders) is written by the next rounds; the shares written meanwhile are written again then.
   */
  async start(): Promise<void> {
    try {
      await this.state.heartbeat(this.instance);
      this.written = true;
    } catch (e) {
      this.warnings.warn("heartbeat", { err: e }, "the instance's heartbeat could not be written yet; trying again every third of EVENTS_INSTANCE_TTL");
    }
    for (const s of this.perInstance) await s.start();
    await this.round();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.follow();
    await this.lease.release();
    for (const s of [...this.perInstance].reverse()) await s.stop();
    await this.state.resign(this.instance).catch((e: unknown) => this.log.warn({ err: e }, "could not remove the instance's heartbeat; it expires"));
  }

  get leader(): boolean {
    return this.leading;
  }

  private async round(): Promise<void> {
    try {
      const renewed = (await this.state.heartbeat(this.instance)) === "renewed";
      // Renewed after one was written: it expired. The first one written (after a failed start) is not a lapse.
      if (renewed && this.written) this.lapsed();
      this.written = true;
      for (const s of this.perInstance) s.beat?.(renewed);
    } catch (e) {
      this.warnings.warn("heartbeat", { err: e }, "the instance's heartbeat could not be written");
    }
    if (await this.lease.tick()) {
      if (!this.leading && !this.stopped) await this.lead();
    } else await this.follow();
    if (!this.stopped) this.timer = setTimeout(() => void this.round(), Math.max(250, Math.floor(this.ttlMs / 3)));
  }

  /**
   * The heartbeat had expired (refreshed less often than the TTL: a stalled event loop, a slow or unreachable
   * broker): until this refresh the leader counted the instance gone and ignored what it wrote.
   */
  private lapsed(): void {
    this.lapses?.inc();
    this.warnings.warn(
      "heartbeat lapse",
      { ttlMs: this.ttlMs },
      "the instance's heartbeat had expired before it was refreshed: the cluster counted this instance gone meanwhile (EVENTS_INSTANCE_TTL); its shares are written again",
    );
  }

  private async lead(): Promise<void> {
    this.leading = true;
    this.log.info({ instance: this.instance, services: this.perCluster.map((s) => s.name) }, "this instance leads the cluster's services");
    for (const s of this.perCluster) await s.start().catch((e: unknown) => this.log.error({ err: e, service: s.name }, "a cluster service failed to start"));
  }

  private async follow(): Promise<void> {
    if (!this.leading) return;
    this.leading = false;
    this.log.info({ instance: this.instance }, "this instance no longer leads the cluster's services");
    for (const s of [...this.perCluster].reverse()) await s.stop();
  }
}
