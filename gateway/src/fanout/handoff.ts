/**
 * The hand-off of one subscription from stored messages to the live feed, as a pure state machine: no
 * socket, no broker. The driver (catchup.ts) performs what the machine asks through its port and reports
 * back; tests drive it with a memory stream and a fake socket (gateway/test/unit/handoff.test.ts).
 *
 * The rule that makes it exact. When the hand-off starts, the live feed is at `target`: every matching
 * message after `target` will reach the machine through `live()`, in order, and is held. Stored messages
 * are read in pages; a page covers `[from, coverEnd]` (every matching message in that range is in it).
 * Once the pages cover `target`, the held messages are written and the socket joins the feed in one
 * synchronous step: nothing is missed and nothing is sent twice. A page can hold messages the feed has not
 * delivered yet (they are stored, and on their way to the feed): those are left to the feed, never written
 * from the page — otherwise the topic would deliver them a second time after the join. When the hold
 * overflows (messages or bytes) while a page is being read, it is dropped and `target` moves to the newest
 * live message: those are read from the stream. When it overflows while the machine waits for the socket to
 * drain, the client is what holds it up: the hand-off fails with `slowError()` (a temporary error: the
 * client resumes from `lastSent`), as it does when the driver's deadline passes (`expire`).
 *
 * The client's position can be past the feed's: it resumed at a seq the stream holds but the feed has not
 * fanned out yet (the feed lags the stream: messages in flight, or a region's mirror republishing a backlog).
 * Joining then would have the topic send it every message the feed still fans out up to its position, each a
 * second time. So the machine reads pages of (feed position, `lastSent`] to learn the newest stored message
 * there the feed owes (it writes none of them: the client has them), and the socket joins only once the feed
 * has passed it; live messages after `lastSent` are held meanwhile, so none is skipped either.
 */
export type HandoffItem<F> = { readonly seq: number; readonly frame: F };

/** Stored messages of the pattern: every matching message with seq in [from, coverEnd], in order. */
export type HandoffPage<F> = { readonly from: number; readonly coverEnd: number; readonly items: readonly HandoffItem<F>[] };

/** What a write achieved: `n` frames written; `full` the socket wants to drain; `dropped` it refused one. */
export type WriteResult = { n: number; stop?: "full" | "dropped" };

export type HandoffEnd =
  /**
   * Joined the live feed. `covered`: every stored message up to it was written, or predates the start; a
   * message the feed delivers late (a repair) with a seq above it and not among `held` was never written.
   */
  | { type: "joined"; lastSent: number; covered: number; held: readonly number[] }
  /** The socket was taken out of delivery or refused a frame; resume later after `lastSent`. */
  | { type: "suspended"; lastSent: number }
  | { type: "failed"; lastSent: number; error: unknown };

export interface HandoffPort<F> {
  /** Asks for the page that holds `from`; the answer comes back through `page()` (or `fetchFailed()`). */
  fetch(from: number, target: number): void;
  /** Writes `items[start..]` in order until done or the socket is full; never splits a frame. */
  write(items: readonly HandoffItem<F>[], start: number): WriteResult;
  /** Calls `resume()` once the socket has drained. */
  waitDrain(): void;
  /** Writes the held frames and joins the live feed in one synchronous step. */
  join(held: readonly HandoffItem<F>[]): WriteResult;
  end(e: HandoffEnd): void;
}

/** Bounds of the hold beyond its message count, and what a slow client's failure says. */
export type HandoffOptions<F> = {
  /** Bytes of held frames at most (`sizeOf` each). */
  holdBytes?: number;
  sizeOf?: (frame: F) => number;
  /** The error of a hold that overflowed while waiting for the socket; without it, the hold is dropped and re-read. */
  slowError?: () => unknown;
};

export type HandoffState =
  | "idle"
  | "fetching"
  | "writing"
  | "draining"
  /** Reading pages of (feed position, lastSent]: the feed lags the client's position. */
  | "probing"
  /** Waiting for the feed to pass the newest stored message at or below lastSent before joining. */
  | "trailing"
  | "joined"
  | "suspended"
  | "failed"
  | "cancelled";

export class Handoff<F> {
  private st: HandoffState = "idle";
  private held: HandoffItem<F>[] = [];
  private heldBytes = 0;
  private page_?: HandoffPage<F>;
  private pos = 0;
  /** Every matching message up to here was written (or predates the start). */
  private covered: number;
  private awaiting = 0;
  /** The feed's position: the target, or the newest live message seen. Pages are written up to it only. */
  private feedPos: number;
  /** The pages of (feed position at the start, lastSent] read so far cover up to here. */
  private probed: number;
  /** The newest stored message at or below lastSent found there: the feed must pass it before the join. */
  private owed = 0;
  /** Pages read and times the socket made the machine wait; for the debug line. */
  pages = 0;
  throttles = 0;

  /**
   * `lastSent`: the client has everything up to this seq (it resumes after it).
   * `target`: the live feed's position now. `holdLimit`: live messages held at most.
   */
  constructor(
    private readonly port: HandoffPort<F>,
    private lastSent_: number,
    private target_: number,
    private readonly holdLimit: number,
    private readonly opts: HandoffOptions<F> = {},
  ) {
    this.covered = lastSent_;
    this.feedPos = target_;
    this.probed = target_;
  }

  get state(): HandoffState {
    return this.st;
  }

  get lastSent(): number {
    return this.lastSent_;
  }

  get target(): number {
    return this.target_;
  }

  get heldCount(): number {
    return this.held.length;
  }

  get heldSize(): number {
    return this.heldBytes;
  }

  get done(): boolean {
    return this.st === "joined" || this.st === "suspended" || this.st === "failed" || this.st === "cancelled";
  }

  start(): void {
    if (this.st !== "idle") return;
    this.next();
  }

  /** A live message of the feed, in feed order. */
  live(seq: number, frame: F): void {
    if (this.done) return;
    this.take(seq, frame);
    if (this.st === "trailing" && this.feedPos >= this.owed) this.next();
  }

  private take(seq: number, frame: F): void {
    if (seq > this.feedPos) this.feedPos = seq;
    if (seq <= this.lastSent_) return;
    const size = this.opts.sizeOf?.(frame) ?? 0;
    if (this.held.length >= this.holdLimit || this.heldBytes + size > (this.opts.holdBytes ?? Infinity)) {
      // The client reads too slowly to ever catch up: it resumes later from what it has.
      if (this.st === "draining" && this.opts.slowError) return this.fail(this.opts.slowError());
      // Read these from the stream instead: the feed's next messages come after this one.
      this.held = [];
      this.heldBytes = 0;
      if (seq > this.target_) this.target_ = seq;
      return;
    }
    if (seq <= this.target_) return; // covered by the pages (a repair of the feed delivered it late)
    this.held.push({ seq, frame });
    this.heldBytes += size;
  }

  /** The driver's deadline passed before the join: fails with `error` (nothing more is written). */
  expire(error: unknown): void {
    if (this.done) return;
    this.fail(error);
  }

  /** The page asked for with `fetch(from)`. */
  page(from: number, p: HandoffPage<F>): void {
    if ((this.st !== "fetching" && this.st !== "probing") || from !== this.awaiting) return;
    if (p.from > from || p.coverEnd < from) return this.fail(new Error(`page [${p.from}, ${p.coverEnd}] does not hold ${from}`));
    this.pages++;
    if (this.st === "probing") return this.probe(p);
    this.page_ = p;
    this.pos = firstAfter(p.items, this.lastSent_);
    this.pump(p);
  }

  fetchFailed(from: number, error: unknown): void {
    if ((this.st !== "fetching" && this.st !== "probing") || from !== this.awaiting) return;
    this.fail(error);
  }

  /** The socket drained. */
  resume(): void {
    if (this.st !== "draining") return;
    if (this.page_) this.pump(this.page_);
    else this.next();
  }

  /** The socket left live delivery (slow): stop after what was written. */
  suspend(): void {
    if (this.done) return;
    this.finish("suspended");
    this.port.end({ type: "suspended", lastSent: this.lastSent_ });
  }

  /** Unsubscribed or closed: stop without a word. */
  cancel(): void {
    if (this.done) return;
    this.finish("cancelled");
  }

  private pump(p: HandoffPage<F>): void {
    this.st = "writing";
    // Items past the feed's position are the feed's to deliver (see the class comment).
    const end = firstAfter(p.items, this.feedPos);
    if (this.pos < end) {
      const items = end === p.items.length ? p.items : p.items.slice(0, end);
      const r = this.port.write(items, this.pos);
      if (r.n > 0) {
        this.pos += r.n;
        this.lastSent_ = p.items[this.pos - 1]?.seq ?? this.lastSent_;
      }
      if (this.done) return; // the port ended it (e.g. the socket closed)
      if (r.stop === "dropped") return this.suspend();
      if (this.pos < end) return this.wait();
    }
    this.page_ = undefined;
    const coverEnd = Math.min(p.coverEnd, this.feedPos);
    if (coverEnd > this.covered) this.covered = coverEnd;
    if (this.lastSent_ > this.covered) this.covered = this.lastSent_;
    this.next();
  }

  /** Joins when the pages cover the target and the feed has passed the client's position, else asks for the next page. */
  private next(): void {
    if (this.covered < this.target_) {
      this.st = "fetching";
      this.awaiting = this.covered + 1;
      this.port.fetch(this.awaiting, this.target_);
      return;
    }
    if (this.feedPos < this.lastSent_) return this.trail();
    this.join();
  }

  /** The feed is behind the client's position (see the class comment): learn what it owes up to there, then wait for it. */
  private trail(): void {
    if (this.probed < this.lastSent_) {
      this.st = "probing";
      this.awaiting = this.probed + 1;
      this.port.fetch(this.awaiting, this.lastSent_);
      return;
    }
    if (this.feedPos >= this.owed) return this.join();
    this.st = "trailing";
  }

  /** A page of (feed position, lastSent]: nothing of it is written (the client has it); its newest message there is owed. */
  private probe(p: HandoffPage<F>): void {
    const owed = p.items[firstAfter(p.items, this.lastSent_) - 1]?.seq;
    if (owed !== undefined && owed > this.owed) this.owed = owed;
    this.probed = p.coverEnd;
    this.next();
  }

  private wait(): void {
    this.st = "draining";
    this.throttles++;
    this.port.waitDrain();
  }

  private join(): void {
    const held = this.held.filter((h) => h.seq > this.lastSent_);
    const r = this.port.join(held);
    this.lastSent_ = held[r.n - 1]?.seq ?? this.lastSent_;
    if (this.done) return;
    if (r.stop === "dropped" || r.n < held.length) return this.suspend();
    const covered = this.covered;
    this.finish("joined");
    this.port.end({ type: "joined", lastSent: this.lastSent_, covered, held: held.map((h) => h.seq) });
  }

  private fail(error: unknown): void {
    this.finish("failed");
    this.port.end({ type: "failed", lastSent: this.lastSent_, error });
  }

  private finish(st: HandoffState): void {
    this.st = st;
    this.held = [];
    this.heldBytes = 0;
    this.page_ = undefined;
  }
}

/** Index of the first item with seq > after (items are in seq order). */
function firstAfter<F>(items: readonly HandoffItem<F>[], after: number): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((items[mid]?.seq ?? Infinity) <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
