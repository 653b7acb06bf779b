// Loss, duplicate and order accounting for one (client, publisher) pair.
//
// Memory is fixed per tracker: the highest sequence seen plus a ring bitmap of the last SEQ_WINDOW
// sequences (32 bytes of bits, about 150 bytes in all), so 10,000 clients × a few publishers stay in
// a few megabytes. Within the window a repeat is a duplicate and a fill-in is out-of-order. A message
// older than the window is counted as out-of-order and `late`; whether it was also a duplicate cannot
// be told, so it is taken as new (documented in subtools/README.md).

/** Sequences remembered behind the highest one. A power of two. */
export const SEQ_WINDOW = 256;

/** What {@link SeqTracker.see} found. */
export const SeqResult = { InOrder: 0, Duplicate: 1, OutOfOrder: 2 } as const;
export type SeqResult = (typeof SeqResult)[keyof typeof SeqResult];

export class SeqTracker {
  /** Lowest sequence this tracker expects (1, or the first one seen when joining late). */
  start = 0;
  /** Highest sequence seen; 0 before the first message. */
  hi = 0;
  /** Distinct sequences received. */
  distinct = 0;
  duplicates = 0;
  outOfOrder = 0;
  /** Out-of-order arrivals older than the window (a subset of outOfOrder). */
  late = 0;
  /** The publisher's announced total from its end marker, or -1. */
  endTotal = -1;
  private readonly bits = new Uint32Array(SEQ_WINDOW >>> 5);

  /**
   * @param fromOne count expected messages from sequence 1 (replay from the start, or a subscriber known to
   *   be up before the publisher); otherwise from the first sequence seen, so joining late is not loss.
   */
  constructor(fromOne: boolean) {
    if (fromOne) this.start = 1;
  }

  see(seq: number): SeqResult {
    if (this.start === 0) {
      this.start = seq;
      this.hi = seq - 1;
    }
    if (seq > this.hi) {
      const from = seq - this.hi >= SEQ_WINDOW ? seq - SEQ_WINDOW + 1 : this.hi + 1;
      for (let s = from; s < seq; s++) this.clear(s);
      this.set(seq);
      this.hi = seq;
      this.distinct++;
      return SeqResult.InOrder;
    }
    if (seq < this.start) {
      this.start = seq;
      this.late++;
    } else if (seq > this.hi - SEQ_WINDOW) {
      if (this.isSet(seq)) {
        this.duplicates++;
        return SeqResult.Duplicate;
      }
      this.set(seq);
    } else {
      this.late++;
    }
    this.outOfOrder++;
    this.distinct++;
    return SeqResult.OutOfOrder;
  }

  /** Records the publisher's end marker. */
  end(total: number): void {
    this.endTotal = total;
  }

  /** Messages this tracker should have received. */
  expected(): number {
    const last = this.endTotal >= 0 ? Math.max(this.endTotal, this.hi) : this.hi;
    const first = this.start === 0 ? 1 : this.start;
    return Math.max(0, last - first + 1);
  }

  lost(): number {
    return Math.max(0, this.expected() - this.distinct);
  }

  private set(seq: number): void {
    const i = seq & (SEQ_WINDOW - 1);
    this.bits[i >>> 5]! |= 1 << (i & 31);
  }
  private clear(seq: number): void {
    const i = seq & (SEQ_WINDOW - 1);
    this.bits[i >>> 5]! &= ~(1 << (i & 31));
  }
  private isSet(seq: number): boolean {
    const i = seq & (SEQ_WINDOW - 1);
    return (this.bits[i >>> 5]! & (1 << (i & 31))) !== 0;
  }
}
