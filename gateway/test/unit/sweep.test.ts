import { describe, expect, it } from "vitest";
import fc from "fast-check";
import type { StoredPage } from "../../src/broker/broker.js";
import { matches } from "../../src/protocol/channel.js";
import { MemoryReplay } from "#testkit/memory-replay.js";
import { ReplayCache } from "../../src/fanout/replay-cache.js";
import { StreamSweep, SWEEP_SPAN } from "../../src/fanout/sweep.js";

/** Reads a pattern page by page from `from` to `target` the way a catch-up does. */
async function readAll(read: (from: number) => Promise<StoredPage>, from: number, target: number): Promise<number[]> {
  const seqs: number[] = [];
  for (let f = from; f <= target;) {
    const p = await read(f);
    for (const m of p.messages) seqs.push(m.seq);
    expect(p.coverEnd).toBeGreaterThanOrEqual(f - 1);
    f = p.coverEnd + 1;
  }
  return seqs;
}

describe("stream sweep — one pass serves many patterns", () => {
  it("stream sweep — every waiter gets exactly its own messages from its position, in order, and the stream is read in one pass", async () => {
    const r = new MemoryReplay(100);
    for (let i = 0; i < 2_000; i++) r.append(`user.${i % 40}`);
    const sweep = new StreamSweep(r);
    const target = r.msgs.length;
    const froms = Array.from({ length: 40 }, (_, c) => 1_000 + c * 7);
    const got = await Promise.all(froms.map((from, c) => readAll((f) => sweep.read(`user.${c}`, f, target), from, target)));
    for (const [c, seqs] of got.entries()) {
      const want = r.msgs.filter((m) => m.channel === `user.${c}` && m.seq >= froms[c]!).map((m) => m.seq);
      expect(seqs).toEqual(want);
    }
    // Only dense reads of the whole stream, about (2,000 - 1,000) / 100 of them, not 40 × pages per channel.
    expect(r.reads.every((x) => x.pattern === ">")).toBe(true);
    expect(sweep.pages).toBeLessThanOrEqual(12);
  });

  it("stream sweep — wildcard waiters get the matching channels of each page", async () => {
    const r = new MemoryReplay(30);
    for (let i = 0; i < 300; i++) r.append(i % 3 === 0 ? `a.${i % 5}` : `b.${i % 4}.x`);
    const sweep = new StreamSweep(r);
    const target = r.msgs.length;
    const [a, b] = await Promise.all([readAll((f) => sweep.read("a.*", f, target), 10, target), readAll((f) => sweep.read("b.>", f, target), 55, target)]);
    expect(a).toEqual(r.msgs.filter((m) => m.seq >= 10 && matches("a.*", m.channel)).map((m) => m.seq));
    expect(b).toEqual(r.msgs.filter((m) => m.seq >= 55 && matches("b.>", m.channel)).map((m) => m.seq));
  });

  it("stream sweep — a read far behind the pass is read alone instead of dragging everyone back", async () => {
    const r = new MemoryReplay(100);
    for (let i = 0; i < 10; i++) r.append(`c.${i}`);
    // Pretend the stream is long: positions SWEEP_SPAN apart.
    const sweep = new StreamSweep(r);
    r.held = true;
    const near = sweep.read("c.1", 1, 10);
    const far = sweep.read("c.2", SWEEP_SPAN + 100, SWEEP_SPAN + 200);
    r.release();
    await Promise.all([near, far]);
    expect(r.reads).toEqual([
      { pattern: ">", from: 1 },
      { pattern: "c.2", from: SWEEP_SPAN + 100 },
    ]);
  });

  it("stream sweep — a failed pass rejects its waiters, and the next reads start a new pass", async () => {
    const r = new MemoryReplay(100);
    for (let i = 0; i < 10; i++) r.append(`c.${i}`);
    const sweep = new StreamSweep(r);
    const orig = r.read.bind(r);
    r.read = async () => {
      throw new Error("leader election");
    };
    const failed = await Promise.allSettled([sweep.read("c.1", 1, 10), sweep.read("c.2", 1, 10)]);
    expect(failed.map((x) => x.status)).toEqual(["rejected", "rejected"]);
    r.read = orig;
    const p = await sweep.read("c.3", 1, 10);
    expect(p.messages.map((m) => m.seq)).toEqual([4]);
    // The pass ends one turn after its last page, once nobody asked for more.
    await new Promise((res) => setImmediate(res));
    expect(sweep.active).toBe(false);
  });

  it("stream sweep — property: any positions of any channels, each reader gets exactly its messages once, in order", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 7 }), { minLength: 1, maxLength: 300 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 8 }), fc.integer({ min: 1, max: 300 })), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 1, max: 40 }),
        async (channels, readers, pageSize) => {
          const r = new MemoryReplay(pageSize);
          for (const c of channels) r.append(`k.${c}`);
          const sweep = new StreamSweep(r);
          const target = r.msgs.length;
          const pattern = (c: number) => (c === 8 ? "k.*" : `k.${c}`);
          const got = await Promise.all(readers.map(([c, from]) => readAll((f) => sweep.read(pattern(c), f, target), from, target)));
          readers.forEach(([c, from], i) => {
            expect(got[i]).toEqual(r.msgs.filter((m) => m.seq >= from && matches(pattern(c), m.channel)).map((m) => m.seq));
          });
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("replay cache — joins the sweep under a storm of patterns", () => {
  it("replay cache — with 3 patterns being read, a 4th pattern's page comes from a pass over the stream; pages are exact either way", async () => {
    const r = new MemoryReplay(100);
    for (let i = 0; i < 1_000; i++) r.append(`u.${i % 10}`);
    const cache = new ReplayCache(r, 64 << 20, 3);
    const target = r.msgs.length;
    r.held = true;
    const first = [0, 1, 2].map((c) => cache.get(`u.${c}`, 500, target));
    const fourth = cache.get("u.3", 500, target);
    r.release();
    const pages = await Promise.all([...first, fourth]);
    expect(r.reads.slice(0, 4).map((x) => x.pattern)).toEqual(["u.0", "u.1", "u.2", ">"]);
    expect(cache.stats().sweepPages).toBe(1);
    pages.forEach((p, c) => {
      const want = r.msgs.filter((m) => m.channel === `u.${c}` && m.seq >= 500 && m.seq <= p.coverEnd).map((m) => m.seq);
      expect(p.items.map((i) => i.seq)).toEqual(want);
      expect(p.from).toBe(500);
    });
  });
});

describe("replay cache — one stream per namespace", () => {
  /** Two streams in one memory store: patterns under `a.` are stream A's, the rest B's (as a broker's streamOf says). */
  function twoStreams(r: MemoryReplay): MemoryReplay & { streamOf(p: string): { name: string; read(from: number, target: number): Promise<StoredPage> } } {
    const scope = (name: string, all: string) => ({ name, read: (from: number, target: number) => r.read(all, from, target) });
    return Object.assign(r, { streamOf: (p: string) => (p.startsWith("a.") ? scope("A", "a.>") : scope("B", "b.>")) });
  }

  it("replay cache — a pass reads one stream only, and a recreated stream drops only its patterns' pages", async () => {
    const r = twoStreams(new MemoryReplay(50));
    for (let i = 0; i < 400; i++) r.append(i % 2 === 0 ? `a.${i % 6}` : `b.${i % 6}`);
    const cache = new ReplayCache(r, 64 << 20, 2);
    const target = r.msgs.length;
    const pats = ["a.0", "a.2", "a.4", "b.1", "b.3", "b.5"];
    const page = async (p: string, f: number): Promise<StoredPage> => {
      const pg = await cache.get(p, f, target);
      return { messages: pg.items.map((x) => ({ seq: x.seq })), coverEnd: pg.coverEnd } as unknown as StoredPage;
    };
    const got = await Promise.all(pats.map((p) => readAll((f) => page(p, f), 1, target)));
    for (const [i, p] of pats.entries()) expect(got[i]).toEqual(r.msgs.filter((m) => m.channel === p).map((m) => m.seq));
    // Passes read `a.>` or `b.>`, never `>`: a pass never mixes two streams' sequences.
    expect(r.reads.some((x) => x.pattern === "a.>")).toBe(true);
    expect(r.reads.some((x) => x.pattern === "b.>")).toBe(true);
    expect(r.reads.every((x) => x.pattern !== ">")).toBe(true);
    const before = cache.stats();
    cache.clearStream("A");
    const fetches = cache.stats().fetches;
    await cache.get("b.1", 1, target);
    expect(cache.stats().fetches).toBe(fetches);
    await cache.get("a.0", 1, target);
    expect(cache.stats().fetches).toBe(fetches + 1);
    expect(before.pages).toBeGreaterThan(0);
  });
});
