import type { Bus } from "../broker/broker.js";
import type { Answerer, Coverage } from "./ops.js";

/**
 * Who has answered a scatter: per instance, its workers. An instance says in each reply how many workers it
 * runs, so once one of its workers answered the door knows how many more to wait for. Instances nobody has
 * heard from cannot be counted: `settled()` is true once every instance heard from is whole, and the caller
 * then waits a short settle time for a further instance (see `gather`).
 */
export class Roll {
  private readonly instances = new Map<string, { expected: number; heard: Set<number> }>();
  private answers = 0;

  /** Records an answer; false for a repeat (the same worker twice), which the caller drops. */
  add(a: Answerer): boolean {
    let i = this.instances.get(a.instance);
    if (!i) {
      i = { expected: a.workers, heard: new Set() };
      this.instances.set(a.instance, i);
    }
    i.expected = Math.max(i.expected, a.workers);
    if (i.heard.has(a.worker)) return false;
    i.heard.add(a.worker);
    this.answers++;
    return true;
  }

  /** Every instance heard from has answered with all of its workers. */
  settled(): boolean {
    if (this.instances.size === 0) return false;
    for (const i of this.instances.values()) if (i.heard.size < i.expected) return false;
    return true;
  }

  coverage(): Coverage {
    return { instances: this.instances.size, workers: this.answers, complete: this.settled() };
  }
}

export type GatherBounds = {
  /** The longest the whole gathering may take. */
  timeoutMs: number;
  /** Once settled, how long to wait for an instance not heard from yet. */
  settleMs: number;
};

/**
 * Sends `body` to every worker of every instance (the bus's scatter) and collects their replies: it ends
 * `settleMs` after the roll is settled (every instance heard from whole) with no further answer, or at
 * `timeoutMs` with `complete: false`. A reply that is not a valid answer (`decode` returns undefined) is
 * ignored.
 */
export function gather<T extends Answerer>(
  bus: Bus,
  subject: string,
  body: Uint8Array,
  decode: (b: Uint8Array) => T | undefined,
  bounds: GatherBounds,
): Promise<{ replies: T[]; coverage: Coverage }> {
  return new Promise((resolve) => {
    const roll = new Roll();
    const replies: T[] = [];
    let settle: NodeJS.Timeout | undefined;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(settle);
      clearTimeout(deadline);
      scatter.stop();
      resolve({ replies, coverage: roll.coverage() });
    };
    const deadline = setTimeout(finish, bounds.timeoutMs);
    const scatter = bus.scatter(subject, body, (b) => {
      if (done) return;
      const r = decode(b);
      if (!r || !roll.add(r)) return;
      replies.push(r);
      clearTimeout(settle);
      settle = roll.settled() ? setTimeout(finish, bounds.settleMs) : undefined;
    });
  });
}
