/**
 * Promises still under way that a drain must not cut (the events a worker's closing sockets record): each is
 * tracked until it settles, and `settled` waits for those of the moment, within a bound.
 */
export class InFlight {
  private readonly pending = new Set<Promise<unknown>>();

  /** Tracks `p` until it settles; returns it unchanged. */
  track<T>(p: Promise<T>): Promise<T> {
    this.pending.add(p);
    const done = (): void => void this.pending.delete(p);
    p.then(done, done);
    return p;
  }

  get size(): number {
    return this.pending.size;
  }

  /** Resolves once every promise tracked now has settled (true), or after `timeoutMs` (false: some had not). */
  async settled(timeoutMs: number): Promise<boolean> {
    if (this.pending.size === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const all = Promise.allSettled([...this.pending]).then(() => true);
    const late = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), timeoutMs)));
    try {
      return await Promise.race([all, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}
