import { cpuUsage } from "node:process";
import fc from "fast-check";
import { applyDelta, createDelta } from "fossil-delta";
import { describe, expect, it } from "vitest";
import { ChannelDeltas, DEFAULT_DELTA_LIMITS } from "../../src/fanout/deltas.js";
import { createBoundedDelta } from "../../src/fanout/fossil-encode.js";
import { slowDeltaPair } from "#testkit/deltas.js";

const enc = new TextEncoder();
const same = (a: Uint8Array, b: Uint8Array): boolean => Buffer.from(a).equals(Buffer.from(b));

/** CPU milliseconds `fn` takes, the median of `n` runs (CPU, not wall time: the test machine is shared). */
function cpuMs(fn: () => void, n = 5): number {
  const runs: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = cpuUsage();
    fn();
    const d = cpuUsage(t);
    runs.push((d.user + d.system) / 1_000);
  }
  return runs.sort((a, b) => a - b)[n >> 1]!;
}

/** A 64 KiB array of objects, and the same with a few fields changed and two items gone: an ordinary update. */
function ordinaryPair(): [Uint8Array, Uint8Array] {
  const items = Array.from({ length: 1_500 }, (_, i) => ({ id: i, name: `user${i}`, score: (i * 7_919) % 1_000, tags: ["a", `b${i % 13}`] }));
  const base = enc.encode(JSON.stringify(items));
  items[5]!.score = 1;
  items[700]!.name = "x";
  items.splice(300, 2);
  return [base, enc.encode(JSON.stringify(items))];
}

describe("fossil-encode — the bounded Fossil encoder", () => {
  it("fossil-encode — with room to work, byte for byte fossil-delta's createDelta (random bytes, edits, repetitive text)", () => {
    const edit = fc.record({ at: fc.nat(), remove: fc.nat(40), insert: fc.uint8Array({ maxLength: 40 }) });
    const source = fc.oneof(
      fc.uint8Array({ maxLength: 3_000 }),
      fc
        .tuple(fc.uint8Array({ minLength: 1, maxLength: 20 }), fc.nat(200))
        .map(([b, n]) => Uint8Array.from({ length: b.length * n }, (_, i) => b[i % b.length]!)),
    );
    fc.assert(
      fc.property(source, fc.array(edit, { maxLength: 6 }), (src, edits) => {
        const target = edits.reduce((p, e) => {
          const at = e.at % (p.length + 1);
          return Uint8Array.from([...p.subarray(0, at), ...e.insert, ...p.subarray(at + e.remove)]);
        }, src);
        const ours = createBoundedDelta(src, target, Infinity)!;
        expect(same(ours, createDelta(src, target))).toBe(true);
        expect(same(applyDelta(src, ours), target)).toBe(true);
      }),
      { numRuns: 300, seed: 41 },
    );
  });

  it("fossil-encode — an ordinary 64 KiB update is made under the default bound", () => {
    const [base, target] = ordinaryPair();
    const d = createBoundedDelta(base, target, DEFAULT_DELTA_LIMITS.workPerByte * (base.length + target.length));
    expect(d && same(d, createDelta(base, target))).toBe(true);
    expect(d!.length).toBeLessThan(200);
  });

  it("fossil-encode — payloads crafted to slow the encoder give up within the bound: full message, counted, a few ms of CPU", () => {
    const shapes: [string, number][] = [
      ["0123456789abcdef", 40],
      ["0123456789abcdef", 20],
      ["a", 24],
    ];
    for (const [block, period] of shapes) {
      const [b, t] = slowDeltaPair(65_536, block, period).map((s) => enc.encode(s)) as [Uint8Array, Uint8Array];
      let skipped = 0;
      let made = 0;
      let seq = 0;
      const deltas = new ChannelDeltas(DEFAULT_DELTA_LIMITS, Date.now, { made: () => made++, skipped: () => skipped++ });
      const ms = cpuMs(() => {
        deltas.next("slow", ++seq, b);
        expect(deltas.next("slow", ++seq, t).delta()).toBeUndefined();
      });
      expect(skipped).toBe(5);
      expect(made).toBe(0);
      // fossil-delta takes 70 to 160 ms on these; the bound about 4 ms (8 units per byte of 128 KiB).
      expect(ms, `${block}/${period}`).toBeLessThan(30);
    }
  });
});
