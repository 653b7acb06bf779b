import { describe, expect, it } from "vitest";
import { DurableQuota } from "../../src/broker/jetstream/durable-quota.js";
import { consumerName, consumerPrefix } from "../../src/broker/jetstream/durable.js";

/** A consumer listing the test answers by hand: `pending` holds the calls not answered yet. */
function listing(initial: string[]) {
  const names = [...initial];
  const pending: (() => void)[] = [];
  let calls = 0;
  const list = () => {
    calls++;
    return new Promise<string[]>((r) => pending.push(() => r([...names])));
  };
  const answerAll = async () => {
    while (pending.length > 0) {
      pending.shift()!();
      await new Promise((r) => setImmediate(r));
    }
  };
  return { names, list, answerAll, calls: () => calls };
}

const alice = consumerPrefix("alice");
/** The outcome of an admission, observed from the start (no unhandled rejection while the listing is answered). */
const outcome = (p: Promise<void>) =>
  p.then(
    () => "admitted",
    (e: { code?: string; temporary?: boolean }) => ({ code: e.code, temporary: e.temporary }),
  );

describe("durable quota — admission", () => {
  it("durable quota — counts only the user's names, not the one being created, on a listing made after the request", async () => {
    const l = listing([consumerName("alice", "a"), consumerName("bob", "a"), consumerName("bob", "b"), "other_consumer"]);
    const q = new DurableQuota(l.list, { maxPerUser: 2 });
    const p = q.admit(alice, consumerName("alice", "b"));
    await l.answerAll();
    await expect(p).resolves.toBeUndefined();
    l.names.push(consumerName("alice", "b"));
    const refused = outcome(q.admit(alice, consumerName("alice", "c")));
    await l.answerAll();
    expect(await refused).toEqual({ code: "too_many_durables", temporary: false });
    // A name the user holds is not counted against itself.
    const same = q.admit(alice, consumerName("alice", "b"));
    await l.answerAll();
    await expect(same).resolves.toBeUndefined();
  });

  it("durable quota — a refusal within cacheMs needs no listing; after it, an expired durable lets the user in again", async () => {
    let t = 0;
    const l = listing([consumerName("alice", "a")]);
    const q = new DurableQuota(l.list, { maxPerUser: 1, cacheMs: 1_000, now: () => t });
    const first = outcome(q.admit(alice, consumerName("alice", "x")));
    await l.answerAll();
    expect(await first).toMatchObject({ code: "too_many_durables" });
    expect(l.calls()).toBe(1);
    await expect(q.admit(alice, consumerName("alice", "y"))).rejects.toMatchObject({ code: "too_many_durables" });
    expect(l.calls()).toBe(1);
    l.names.length = 0; // the durable expired
    t = 1_000;
    const later = q.admit(alice, consumerName("alice", "y"));
    await l.answerAll();
    await expect(later).resolves.toBeUndefined();
    expect(l.calls()).toBe(2);
  });

  it("durable quota — admissions arriving during a listing share the next one (a storm costs one listing after another)", async () => {
    const l = listing([]);
    const q = new DurableQuota(l.list, { maxPerUser: 5 });
    const a = q.admit(alice, consumerName("alice", "a"));
    expect(l.calls()).toBe(1);
    const b = q.admit(alice, consumerName("alice", "b"));
    const c = q.admit(alice, consumerName("alice", "c"));
    expect(l.calls()).toBe(1); // b and c wait for the listing after a's, which started before they came
    await l.answerAll();
    await Promise.all([a, b, c]);
    expect(l.calls()).toBe(2);
  });

  it("durable quota — created() counts a new durable in the cached listing at once; -1 never lists", async () => {
    const l = listing([]);
    const q = new DurableQuota(l.list, { maxPerUser: 1, cacheMs: 60_000 });
    const p = q.admit(alice, consumerName("alice", "a"));
    await l.answerAll();
    await p;
    q.created(consumerName("alice", "a"));
    await expect(q.admit(alice, consumerName("alice", "b"))).rejects.toMatchObject({ code: "too_many_durables" });
    const none = listing([]);
    await new DurableQuota(none.list, { maxPerUser: -1 }).admit(alice, consumerName("alice", "z"));
    expect(none.calls()).toBe(0);
  });
});
