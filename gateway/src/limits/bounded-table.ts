/**
 * The entries of one worker's limiter by key (an address, a user, a publisher), made on first use and
 * bounded: when the table is full, the entries that carry no information (`idle`: nothing open or in
 * progress, a full bucket) are swept, and a new key is refused while it stays full. A sweep for a new key
 * runs at most once per `sweepGapMs`: a table full of busy entries would otherwise make every new key pay a
 * whole pass. Pure: time is passed in. The one owner of the limiters' maps (IpTable, ReadLimiter,
 * PublishLimiter).
 */
export class BoundedTable<V> {
  private readonly entries = new Map<string, V>();
  private sweptAt = -Infinity;

  constructor(
    private readonly maxEntries: number,
    private readonly idle: (entry: V, now: number) => boolean,
    private readonly sweepGapMs = 1_000,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string): V | undefined {
    return this.entries.get(key);
  }

  /** The entry of `key`, made by `make` when there is none and room for one; undefined when full of busy entries. */
  entry(key: string, now: number, make: () => V): V | undefined {
    const found = this.entries.get(key);
    if (found) return found;
    if (this.entries.size >= this.maxEntries && now - this.sweptAt >= this.sweepGapMs) {
      this.sweptAt = now;
      this.sweep(now);
    }
    if (this.entries.size >= this.maxEntries) return undefined;
    const made = make();
    this.entries.set(key, made);
    return made;
  }

  /** Drops the idle entries; returns how many. */
  sweep(now: number): number {
    let n = 0;
    for (const [key, e] of this.entries) {
      if (this.idle(e, now)) {
        this.entries.delete(key);
        n++;
      }
    }
    return n;
  }
}
