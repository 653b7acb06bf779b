/**
 * Gap and duplicate detection for a live feed read from a stream's republished messages (core NATS, at
 * most once). Each republished message carries its stream sequence and the sequence of the message stored
 * before it on the same subject (`Nats-Last-Sequence`). Per concrete subject the feed remembers the last
 * sequence it delivered; a message whose predecessor is newer than that was preceded by one the feed never
 * saw. Subjects the feed has not delivered yet are judged against its baseline: every message up to the
 * baseline predates the feed.
 *
 * Pure: no NATS types; the live feed (jetstream-live.ts) owns the I/O.
 */
export type LiveVerdict =
  | { type: "deliver" }
  /** Already delivered (a repair and the live feed overlapped) or older than the feed. */
  | { type: "old" }
  /** Messages on `subject` from `from` up to this one's predecessor were missed: read them from the stream. */
  | { type: "gap"; subject: string; from: number };

const DELIVER: LiveVerdict = { type: "deliver" };
const OLD: LiveVerdict = { type: "old" };

/** Default bound on the subjects remembered per feed (a wildcard feed over many channels). */
export const MAX_TRACKED_SUBJECTS = 65_536;

export class SubjectSequencer {
  private readonly last = new Map<string, number>();
  private base: number;

  /** `baseline`: every matching message with a sequence up to it is older than the feed. */
  constructor(
    baseline: number,
    private readonly maxSubjects = MAX_TRACKED_SUBJECTS,
  ) {
    this.base = baseline;
  }

  get baseline(): number {
    return this.base;
  }

  get tracked(): number {
    return this.last.size;
  }

  /** The last sequence delivered on `subject`, or the baseline when none was. */
  floor(subject: string): number {
    return this.last.get(subject) ?? this.base;
  }

  /**
   * Judges a live message. `prev` is the sequence stored on the subject before it (0: none). A predecessor
   * below the floor is fine: retention removed the message the feed last delivered there.
   */
  check(subject: string, seq: number, prev: number): LiveVerdict {
    const floor = this.floor(subject);
    if (seq <= floor) return OLD;
    if (prev > floor) return { type: "gap", subject, from: floor + 1 };
    return DELIVER;
  }

  /** For messages read from the stream in order (a repair): deliver unless already delivered. */
  fresh(subject: string, seq: number): boolean {
    return seq > this.floor(subject);
  }

  /** Records a delivered message. */
  record(subject: string, seq: number): void {
    const m = this.last;
    if (m.has(subject)) m.delete(subject); // re-insert: Map order is least recently delivered first
    m.set(subject, seq);
    if (m.size > this.maxSubjects) {
      // Forget the least recently delivered subject. Raising the baseline to its last sequence keeps the
      // duplicate check exact for it; a message missed on a forgotten subject before that point is then
      // no longer detected (documented limit; a reconnect or leader change still repairs the whole feed).
      const [oldest, seqOf] = m.entries().next().value as [string, number];
      m.delete(oldest);
      if (seqOf > this.base) this.base = seqOf;
    }
  }

  /** Starts over after the stream was recreated: everything up to `baseline` predates the feed. */
  reset(baseline: number): void {
    this.last.clear();
    this.base = baseline;
  }
}
