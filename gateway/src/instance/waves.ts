/**
 * Start-up of many workers: forking them all at once makes each one's start (module load, NATS connect,
 * consumers) compete with every other for the same cores, so `WORKER_START_WAVE` of them start at a time and
 * the next wave is forked once every worker forked so far listens. A pure schedule, tested in process.
 */
export async function forkInWaves(
  total: number,
  wave: number,
  fork: (slot: number) => void,
  /** Resolves once at least `count` workers listen. */
  listening: (count: number) => Promise<void>,
): Promise<void> {
  const size = wave > 0 ? wave : total;
  for (let first = 1; first <= total; first += size) {
    const last = Math.min(first + size - 1, total);
    for (let slot = first; slot <= last; slot++) fork(slot);
    await listening(last);
  }
}

/** Counts workers that listen and wakes whoever waits for a count. */
export class ListeningCount {
  private n = 0;
  private waiters: { count: number; wake: () => void }[] = [];

  get value(): number {
    return this.n;
  }

  /** One more worker listens. */
  mark(): void {
    this.n++;
    const ready = this.waiters.filter((w) => w.count <= this.n);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((w) => w.count > this.n);
    for (const w of ready) w.wake();
  }

  /** Resolves once `count` workers listen. */
  atLeast(count: number): Promise<void> {
    if (this.n >= count) return Promise.resolve();
    return new Promise((wake) => this.waiters.push({ count, wake }));
  }
}
