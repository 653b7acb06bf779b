import type { BrokerMessage, ReplayApi, StoredPage, StreamScope } from "../broker/broker.js";
import { isWildcard, matches } from "../protocol/channel.js";

/**
 * Distinct patterns being read at once from which the worker reads the stream in one pass instead. A page
 * of one channel costs nats-server time in proportion to the messages of other channels it steps over
 * (about 10 ms for 100 messages of one of 1,000 interleaved channels), so a storm of many channels resuming
 * together costs it (channels × range); one pass over the range costs it the range once, and the worker
 * parses every message in it, wanted or not. Past a few dozen channels the pass is cheaper.
 */
export const SWEEP_PATTERNS = 32;

/**
 * How far (in stream sequences) a read may be from the pass's position and still join it. A read far
 * behind would drag every waiter back over the range between; one far ahead would wait for the pass to
 * read it: both are read alone.
 */
export const SWEEP_SPAN = 65_536;

type Waiter = { pattern: string; from: number; target: number; resolve(p: StoredPage): void; reject(e: unknown): void };

/**
 * One pass over the whole stream, shared by the catch-ups of many patterns: each step reads the next dense
 * page (every subject) from the lowest position anyone waits for, and every waiter whose position that page
 * covers gets its own messages of it as a page covering the same range — the same contract as a page read
 * for its pattern alone (every matching message in `[from, coverEnd]`). Waiters asking for the next page
 * join the following step; the pass ends when nobody waits. Reads more than `SWEEP_SPAN` away from the
 * pass's position are read alone.
 */
export class StreamSweep {
  private waiting: Waiter[] = [];
  private running = false;
  /** Where the pass reads now (the lowest position waited for at its last step). */
  private pos = 0;
  /** Dense pages read (stats, tests). */
  pages = 0;

  /** `scope`: the stream passed over (its pages of every subject); without it the broker's one stream, read with `>`. */
  constructor(
    private readonly replay: ReplayApi,
    private readonly scope?: StreamScope,
  ) {}

  get active(): boolean {
    return this.running || this.waiting.length > 0;
  }

  /** The page of `pattern` from `from` (up to at least `target` when the stream has nothing more). */
  read(pattern: string, from: number, target: number): Promise<StoredPage> {
    if (this.running && Math.abs(from - this.pos) > SWEEP_SPAN) return this.replay.read(pattern, from, target);
    return new Promise<StoredPage>((resolve, reject) => {
      this.waiting.push({ pattern, from, target, resolve, reject });
      if (!this.running) void this.run();
    });
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      while (this.waiting.length > 0) {
        let from = Infinity;
        let target = 0;
        for (const w of this.waiting) {
          if (w.from < from) from = w.from;
          if (w.target > target) target = w.target;
        }
        this.pos = from;
        let page: StoredPage;
        try {
          page = await (this.scope ? this.scope.read(from, target) : this.replay.read(">", from, target));
        } catch (e) {
          // Each waiter retries on its own (catch-ups back off), not necessarily through the pass.
          const failed = this.waiting;
          this.waiting = [];
          for (const w of failed) w.reject(e);
          continue;
        }
        this.pages++;
        this.dispatch(from, page);
        // Let the served readers ask for their next page (they do so in the same turn) before the next step
        // picks its position: otherwise it would start past them, and the step after would go back.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } finally {
      this.running = false;
    }
  }

  /** Serves the waiters whose position lies in the page's range `[from, coverEnd]`; those who came meanwhile
   * with a position before `from` wait for the next step, which starts at the lowest position. */
  private dispatch(from: number, page: StoredPage): void {
    const served: Waiter[] = [];
    const rest: Waiter[] = [];
    for (const w of this.waiting) (w.from >= from && w.from <= page.coverEnd ? served : rest).push(w);
    this.waiting = rest;
    if (served.length === 0 && rest.every((w) => w.from >= from)) {
      // A page that ends before everyone's position (an answer that covers nothing new): read them alone.
      this.waiting = [];
      for (const w of rest) this.replay.read(w.pattern, w.from, w.target).then(w.resolve, w.reject);
      return;
    }
    let byChannel: Map<string, BrokerMessage[]> | undefined;
    for (const w of served) {
      let own: BrokerMessage[];
      if (isWildcard(w.pattern)) {
        own = page.messages.filter((m) => m.seq >= w.from && matches(w.pattern, m.channel));
      } else {
        byChannel ??= groupByChannel(page.messages);
        own = byChannel.get(w.pattern) ?? [];
        const first = own[0];
        if (first !== undefined && first.seq < w.from) own = own.filter((m) => m.seq >= w.from);
      }
      w.resolve({ messages: own, coverEnd: page.coverEnd });
    }
  }
}

function groupByChannel(messages: readonly BrokerMessage[]): Map<string, BrokerMessage[]> {
  const out = new Map<string, BrokerMessage[]>();
  for (const m of messages) {
    const l = out.get(m.channel);
    if (l) l.push(m);
    else out.set(m.channel, [m]);
  }
  return out;
}
