import { describe, expect, it } from "vitest";
import { forkInWaves, ListeningCount } from "../../src/instance/waves.js";

/** Runs the schedule with workers that listen when the test says so; records forks and what listened before each. */
function harness(total: number, wave: number) {
  const listening = new ListeningCount();
  const forked: { slot: number; listeningThen: number }[] = [];
  const done = forkInWaves(
    total,
    wave,
    (slot) => forked.push({ slot, listeningThen: listening.value }),
    (n) => listening.atLeast(n),
  );
  return { listening, forked, done };
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe("worker start-up — forked in waves", () => {
  it("forks the next wave only once every worker forked so far listens", async () => {
    const h = harness(5, 2);
    await turn();
    expect(h.forked.map((f) => f.slot)).toEqual([1, 2]);
    h.listening.mark();
    await turn();
    expect(h.forked.map((f) => f.slot)).toEqual([1, 2]); // one of the first wave still starting
    h.listening.mark();
    await turn();
    expect(h.forked.map((f) => f.slot)).toEqual([1, 2, 3, 4]);
    expect(h.forked[2]!.listeningThen).toBe(2);
    h.listening.mark();
    h.listening.mark();
    await turn();
    expect(h.forked.map((f) => f.slot)).toEqual([1, 2, 3, 4, 5]);
    let finished = false;
    void h.done.then(() => (finished = true));
    await turn();
    expect(finished).toBe(false); // resolves once the last one listens, not when it is forked
    h.listening.mark();
    await h.done;
  });

  it("wave 0, or a wave as large as the pool, forks every worker at once", async () => {
    for (const wave of [0, 4, 10]) {
      const h = harness(4, wave);
      await turn();
      expect(h.forked.map((f) => f.slot)).toEqual([1, 2, 3, 4]);
      for (let i = 0; i < 4; i++) h.listening.mark();
      await h.done;
    }
  });

  it("a count reached before anyone waits resolves at once; waiters wake in any order of counts", async () => {
    const c = new ListeningCount();
    c.mark();
    await c.atLeast(1);
    const woke: number[] = [];
    void c.atLeast(3).then(() => woke.push(3));
    void c.atLeast(2).then(() => woke.push(2));
    c.mark();
    await turn();
    expect(woke).toEqual([2]);
    c.mark();
    await turn();
    expect(woke).toEqual([2, 3]);
  });
});
