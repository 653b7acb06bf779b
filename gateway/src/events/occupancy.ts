/** A cluster-wide transition of a key (shared-keys.ts): `on` is channel.occupied / presence.join, off their ends. */
export type Transition = { key: string; on: boolean };

/** One instance's share of a key, as the shared state holds it. */
export type Share = { key: string; instance: string };

/** What one input led to: the transitions to record, in order, and shares of dead instances to delete. */
export type Step = { transitions: Transition[]; stale: Share[] };

/**
 * The leader's view of who holds what, and the debounce: pure (time is an argument), so orderings, expiries
 * and reconnects are tested in process. Keys are held by instances (each instance reports a key once,
 * however many of its sockets hold it); a key is announced `on` when its first holder comes, and `off`
 * `debounceMs` after its last holder went, unless a holder came back meanwhile (then neither is announced).
 * `on` and `off` alternate strictly per key. An instance whose heartbeat expired holds nothing: its shares
 * are dropped (and reported stale), and shares it writes later are ignored until a heartbeat of it comes.
 *
 * Until `sync`, inputs only build the picture (the records at the start of the leader's watch, and what
 * the previous leader announced): `sync` then announces what differs from what was announced.
 */
export class OccupancyMachine {
  private readonly holders = new Map<string, Set<string>>();
  private readonly held = new Map<string, Set<string>>();
  private readonly alive = new Set<string>();
  private readonly announced = new Set<string>();
  /** Keys announced on whose last holder went: when. */
  private readonly vacating = new Map<string, number>();
  private synced = false;

  constructor(private readonly debounceMs: number) {}

  /** An instance's share of `key` was written (`held`) or deleted. */
  share(key: string, instance: string, held: boolean, now: number): Step {
    const step: Step = { transitions: [], stale: [] };
    if (!held) this.drop(key, instance, now);
    else if (this.synced && !this.alive.has(instance)) step.stale.push({ key, instance });
    else this.hold(key, instance, step);
    return this.due(now, step);
  }

  /** An instance's heartbeat was written (alive) or expired or was deleted (its shares are dropped). */
  heartbeat(instance: string, alive: boolean, now: number): Step {
    const step: Step = { transitions: [], stale: [] };
    if (alive) this.alive.add(instance);
    else {
      this.alive.delete(instance);
      for (const key of [...(this.held.get(instance) ?? [])]) {
        step.stale.push({ key, instance });
        this.drop(key, instance, now);
      }
    }
    return this.due(now, step);
  }

  /** Before `sync`: the previous leader announced `key` on (and not off since). */
  wasAnnounced(key: string): void {
    if (!this.synced) this.announced.add(key);
  }

  /**
   * The start of the watch is read: shares of instances without a heartbeat are dropped, keys held but
   * not announced are announced on, keys announced but not held start their debounce now.
   */
  sync(now: number): Step {
    const step: Step = { transitions: [], stale: [] };
    this.synced = true;
    for (const [instance, keys] of [...this.held])
      if (!this.alive.has(instance))
        for (const key of [...keys]) {
          step.stale.push({ key, instance });
          this.drop(key, instance, now);
        }
    for (const key of this.holders.keys()) if (!this.announced.has(key)) this.turn(key, true, step);
    for (const key of this.announced) if (!this.holders.has(key)) this.vacating.set(key, now);
    return this.due(now, step);
  }

  /** The debounces that ran out by `now`. */
  tick(now: number): Step {
    return this.due(now, { transitions: [], stale: [] });
  }

  /** When the next debounce runs out (for the caller's timer); undefined when none is running. */
  nextDue(): number | undefined {
    let next: number | undefined;
    for (const since of this.vacating.values()) if (next === undefined || since + this.debounceMs < next) next = since + this.debounceMs;
    return next;
  }

  private hold(key: string, instance: string, step: Step): void {
    const holders = this.holders.get(key) ?? new Set<string>();
    holders.add(instance);
    this.holders.set(key, holders);
    const held = this.held.get(instance) ?? new Set<string>();
    held.add(key);
    this.held.set(instance, held);
    if (!this.synced || holders.size > 1) return;
    if (this.vacating.delete(key)) return;
    if (!this.announced.has(key)) this.turn(key, true, step);
  }

  private drop(key: string, instance: string, now: number): void {
    const holders = this.holders.get(key);
    if (!holders?.delete(instance)) return;
    const held = this.held.get(instance);
    held?.delete(key);
    if (held?.size === 0) this.held.delete(instance);
    if (holders.size > 0) return;
    this.holders.delete(key);
    if (this.synced && this.announced.has(key)) this.vacating.set(key, now);
  }

  private turn(key: string, on: boolean, step: Step): void {
    if (on) this.announced.add(key);
    else this.announced.delete(key);
    step.transitions.push({ key, on });
  }

  private due(now: number, step: Step): Step {
    for (const [key, since] of this.vacating)
      if (now - since >= this.debounceMs) {
        this.vacating.delete(key);
        this.turn(key, false, step);
      }
    return step;
  }
}
