import type { SharedRecord, SharedStateApi } from "../broker/broker.js";
import type { EventKind } from "../config/sections/index.js";
import type { Logger } from "../log.js";
import type { Service } from "../services/services.js";
import { WarnEvery } from "../util/warn-every.js";
import { OccupancyMachine, type Step, type Transition } from "./occupancy.js";
import type { EventRecorder } from "./recorder.js";
import { subjectOfKey } from "./shared-keys.js";

/**
 * The cluster's channel.occupied / channel.vacated and identified users' presence.join / presence.leave (a
 * once-per-deployment service: only the leader runs it). It watches every instance's shares and heartbeats,
 * feeds them to the debounce (occupancy.ts), and records each transition once: the event first, with a
 * Nats-Msg-Id made of the key, the direction and the key's last announcement's seq (a leader that dies
 * between the two writes, or stops, leaves a repeat the events stream drops), then the announcement, which
 * tells the next leader where each key stands. A key's transitions are recorded one at a time, in order;
 * different keys' side by side.
 */
export class Announcer implements Service {
  readonly name = "announcer";
  private machine?: OccupancyMachine;
  private watch?: { stop(): void };
  private synced = false;
  private timer?: NodeJS.Timeout;
  /** Per key, its transitions being written (in order: a key's next waits for its last). */
  private readonly writing = new Map<string, Promise<void>>();
  /** Per key, the seq of its last announcement (none: never, or gone), and since when it is off. */
  private readonly seqs = new Map<string, { seq: number; offAt?: number }>();
  private sweeper?: NodeJS.Timeout;
  private running = false;
  private readonly warnings: WarnEvery;

  constructor(
    private readonly state: SharedStateApi,
    private readonly recorder: EventRecorder,
    private readonly debounceMs: number,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.warnings = new WarnEvery(log, 10_000, "what");
  }

  /** Starts watching (in the background: a broker that is down is tried again every second). */
  async start(): Promise<void> {
    this.running = true;
    this.sweeper = setInterval(() => this.sweep(), 60_000);
    this.sweeper.unref();
    void this.open();
  }

  async stop(): Promise<void> {
    this.running = false;
    clearInterval(this.sweeper);
    this.close();
    await this.written();
  }

  private async open(): Promise<void> {
    // A watch read while transitions of the last one are still being written could miss their announcements.
    await this.written();
    while (this.running && !this.machine) {
      this.synced = false;
      // What the bucket says is where every key stands: read again with each watch.
      this.seqs.clear();
      const machine = new OccupancyMachine(this.debounceMs);
      this.machine = machine;
      try {
        this.watch = await this.state.watch(
          (r) => this.input(machine, r),
          () => {
            this.synced = true;
            this.apply(machine, machine.sync(this.now()));
          },
          (e) => this.lost(machine, e),
        );
        if (!this.running) this.close();
      } catch (e) {
        this.machine = undefined;
        this.warnings.warn("watch", { err: e }, "the shared state could not be watched; trying again");
        await new Promise((r) => setTimeout(r, 1_000).unref());
      }
    }
  }

  /** The watch ended by itself: watched again from the start (the new view announces what changed meanwhile). */
  private lost(machine: OccupancyMachine, e: unknown): void {
    if (machine !== this.machine) return;
    this.warnings.warn("watch", { err: e }, "the watch of the shared state ended; watching again");
    this.close();
    void this.open();
  }

  private close(): void {
    this.machine = undefined;
    this.watch?.stop();
    this.watch = undefined;
    clearTimeout(this.timer);
  }

  /**
   * Forgets the seqs of keys off for longer than the events stream's duplicate window (2 min): their next
   * `on` has the id of the key's first one again, long after that left the window.
   */
  private sweep(): void {
    const before = this.now() - 300_000;
    for (const [key, s] of this.seqs) if (s.offAt !== undefined && s.offAt < before) this.seqs.delete(key);
  }

  private input(machine: OccupancyMachine, r: SharedRecord): void {
    if (machine !== this.machine) return;
    if (r.type !== "heartbeat") this.log.debug({ record: r }, "shared state record");
    if (r.type === "heartbeat") return this.apply(machine, machine.heartbeat(r.instance, r.alive, this.now()));
    if (r.type === "share") return this.apply(machine, machine.share(r.key, r.instance, r.held, this.now()));
    // Announcements after the start are this leader's own: their seqs are known from writing them.
    if (this.synced) return;
    this.seqs.set(r.key, r.on ? { seq: r.seq } : { seq: r.seq, offAt: this.now() });
    if (r.on) machine.wasAnnounced(r.key);
  }

  private apply(machine: OccupancyMachine, step: Step): void {
    if (step.transitions.length > 0 || step.stale.length > 0) this.log.debug({ transitions: step.transitions, stale: step.stale }, "occupancy step");
    if (step.stale.length > 0) this.state.forget(step.stale).catch((e: unknown) => this.log.debug({ err: e }, "stale shares not deleted"));
    for (const t of step.transitions) this.enqueue(machine, t);
    clearTimeout(this.timer);
    const due = machine.nextDue();
    if (due === undefined) return;
    this.timer = setTimeout(
      () => {
        if (machine === this.machine) this.apply(machine, machine.tick(this.now()));
      },
      Math.max(0, due - this.now()),
    );
    this.timer.unref();
  }

  /** Writes `t` after the key's earlier transitions; keys are written side by side. */
  private enqueue(machine: OccupancyMachine, t: Transition): void {
    const next = (this.writing.get(t.key) ?? Promise.resolve()).then(() => this.record(machine, t));
    this.writing.set(t.key, next);
    void next.then(() => {
      if (this.writing.get(t.key) === next) this.writing.delete(t.key);
    });
  }

  private async written(): Promise<void> {
    await Promise.all([...this.writing.values()]);
  }

  /** Records one transition, trying again (same id) until it is stored and announced, or its watch ended. */
  private async record(machine: OccupancyMachine, t: Transition): Promise<void> {
    const subject = subjectOfKey(t.key);
    if (!subject) return;
    const kind: EventKind = subject.kind === "channel" ? (t.on ? "channel.occupied" : "channel.vacated") : t.on ? "presence.join" : "presence.leave";
    const fields = subject.kind === "channel" ? { channel: subject.channel } : { user: subject.user, channel: subject.channel };
    const msgId = `${t.key}.${t.on ? 1 : 0}.${this.seqs.get(t.key)?.seq ?? 0}`;
    while (this.running && machine === this.machine) {
      try {
        await this.recorder.recordOnce(kind, fields, msgId);
        const seq = await this.state.announce(t.key, t.on);
        this.seqs.set(t.key, t.on ? { seq } : { seq, offAt: this.now() });
        return;
      } catch (e) {
        this.warnings.warn("record", { err: e, type: kind }, "a cluster-wide event could not be recorded; trying again");
        await new Promise((r) => setTimeout(r, 1_000).unref());
      }
    }
  }
}
