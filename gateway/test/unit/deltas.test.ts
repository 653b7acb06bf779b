import { applyDelta } from "fossil-delta";
import { describe, expect, it } from "vitest";
import { ChannelDeltas, DEFAULT_DELTA_LIMITS, DeltaSubscription, type DeltaLimits } from "../../src/fanout/deltas.js";
import { nextScoreboard, scoreboard } from "../../conformance/fossil-vectors.js";
import { rng } from "../../../loadtest/bench/rng.js";

const enc = new TextEncoder();
/** `n` scoreboard documents in a row, as payload bytes. */
function documents(n: number): Uint8Array[] {
  const rnd = rng(1);
  let doc = scoreboard();
  return Array.from({ length: n }, () => {
    doc = nextScoreboard(doc, rnd);
    return enc.encode(JSON.stringify(doc));
  });
}
const limits = (over: Partial<DeltaLimits>): DeltaLimits => ({ ...DEFAULT_DELTA_LIMITS, ...over });

describe("deltas — which message is a delta", () => {
  it("deltas — the first message is full, the next ones deltas that rebuild each payload from the one before", () => {
    const deltas = new ChannelDeltas();
    const sub = new DeltaSubscription();
    const docs = documents(20);
    let have: Uint8Array | undefined;
    docs.forEach((payload, i) => {
      const m = deltas.next("scores.1", 100 + i, payload);
      const kind = sub.next(m);
      expect(kind).toBe(i === 0 ? "full" : "delta");
      have = kind === "full" ? payload : applyDelta(have!, m.delta()!);
      expect(Buffer.from(have).equals(Buffer.from(payload))).toBe(true);
      if (i > 0) expect(m.delta()!.length).toBeLessThan(payload.length / 5);
    });
  });

  it("deltas — the delta is made once per message, whatever the number of subscriptions or feeds", () => {
    const deltas = new ChannelDeltas();
    const subs = Array.from({ length: 1_000 }, () => new DeltaSubscription());
    const [a, b] = documents(2);
    const first = deltas.next("scores.1", 1, a!);
    for (const s of subs) s.next(first);
    const m = deltas.next("scores.1", 2, b!);
    expect(subs.map((s) => s.next(m)).every((k) => k === "delta")).toBe(true);
    // A second feed (another pattern matching the channel) hands the same message over: the same object.
    expect(deltas.next("scores.1", 2, b!)).toBe(m);
    expect(deltas.next("scores.1", 1, a!)).toBe(first);
    expect(m.delta()).toBe(m.delta());
  });

  it("deltas — a gap (the subscription missed the base) gives a full message, then deltas again", () => {
    const deltas = new ChannelDeltas();
    const sub = new DeltaSubscription();
    const [a, b, c, d] = documents(4);
    expect(sub.next(deltas.next("s", 1, a!))).toBe("full");
    deltas.next("s", 2, b!); // not sent to this subscription
    expect(sub.next(deltas.next("s", 3, c!))).toBe("full");
    expect(sub.next(deltas.next("s", 4, d!))).toBe("delta");
  });

  it("deltas — after a restart (resume, epoch change, take-over) every channel's next message is full", () => {
    const deltas = new ChannelDeltas();
    const sub = new DeltaSubscription();
    const [a, b, c] = documents(3);
    sub.next(deltas.next("s", 1, a!));
    expect(sub.next(deltas.next("s", 2, b!))).toBe("delta");
    sub.restart();
    expect(sub.channels).toBe(0);
    expect(sub.next(deltas.next("s", 3, c!))).toBe("full");
  });

  it("deltas — a wildcard subscription's first message on each channel is full, even when the worker has a base", () => {
    const deltas = new ChannelDeltas();
    const early = new DeltaSubscription();
    const wildcard = new DeltaSubscription();
    const [a, b, c, d] = documents(4);
    early.next(deltas.next("scores.1", 1, a!));
    wildcard.next(deltas.next("scores.2", 2, b!));
    const m = deltas.next("scores.1", 3, c!);
    expect([early.next(m), wildcard.next(m)]).toEqual(["delta", "full"]);
    expect(wildcard.next(deltas.next("scores.1", 4, d!))).toBe("delta");
  });

  it("deltas — a delta not smaller than the message is a full message for everyone", () => {
    const deltas = new ChannelDeltas();
    const sub = new DeltaSubscription();
    sub.next(deltas.next("s", 1, enc.encode('{"a":"qwertyuiop"}')));
    const m = deltas.next("s", 2, enc.encode('{"b":[1,2,3,4,5]}'));
    expect(m.delta()).toBeUndefined();
    expect(sub.next(m)).toBe("full");
  });

  it("deltas — a payload that is not JSON is sent full under the JSON protocol's rule, and may be a delta without it", () => {
    const text = (i: number) => enc.encode(`plain text line ${"x".repeat(200)} number ${i}`);
    for (const [jsonTargetsOnly, want] of [
      [true, "full"],
      [false, "delta"],
    ] as const) {
      const deltas = new ChannelDeltas(limits({ jsonTargetsOnly }));
      const sub = new DeltaSubscription();
      sub.next(deltas.next("s", 1, text(1)));
      expect(sub.next(deltas.next("s", 2, text(2)))).toBe(want);
    }
  });

  it("deltas — seqs that start over (a recreated stream) or go back (a late repair) have no base", () => {
    const deltas = new ChannelDeltas();
    const sub = new DeltaSubscription();
    const [a, b, c, d] = documents(4);
    sub.next(deltas.next("s", 10, a!));
    expect(sub.next(deltas.next("s", 11, b!))).toBe("delta");
    const late = deltas.next("s", 7, c!);
    expect([late.baseSeq, late.delta(), sub.next(late)]).toEqual([0, undefined, "full"]);
    deltas.clear();
    expect(deltas.size).toEqual({ channels: 0, bytes: 0 });
    const restarted = deltas.next("s", 1, d!);
    expect([restarted.baseSeq, sub.next(restarted)]).toEqual([0, "full"]);
  });

  it("deltas — the base is the worker's copy: a payload buffer reused by its owner does not change it", () => {
    const deltas = new ChannelDeltas();
    const [a, b] = documents(2);
    const reused = a!.slice();
    deltas.next("s", 1, reused);
    reused.fill(0x20);
    const m = deltas.next("s", 2, b!);
    expect(Buffer.from(applyDelta(a!, m.delta()!)).equals(Buffer.from(b!))).toBe(true);
  });
});

describe("deltas — bounded memory", () => {
  it("deltas — past maxChannels the least recently updated channel is forgotten", () => {
    const deltas = new ChannelDeltas(limits({ maxChannels: 2 }));
    const [a, b] = documents(2);
    deltas.next("c1", 1, a!);
    deltas.next("c2", 2, a!);
    deltas.next("c1", 3, b!);
    deltas.next("c3", 4, a!); // c2 is the least recently updated
    expect(deltas.size.channels).toBe(2);
    expect(deltas.next("c2", 5, b!).baseSeq).toBe(0);
    expect(deltas.next("c3", 6, b!).baseSeq).toBe(4);
  });

  it("deltas — payload bytes stay under maxBytes, and a payload over maxPayloadBytes keeps no base", () => {
    const [a, b] = documents(2);
    const deltas = new ChannelDeltas(limits({ maxBytes: a!.length * 5 }));
    for (let i = 0; i < 20; i++) deltas.next(`c${i}`, i + 1, a!);
    expect(deltas.size.bytes).toBeLessThanOrEqual(a!.length * 5);
    expect(deltas.size.channels).toBe(5);
    // A channel whose deltas nobody made holds three payloads: both messages and the older one's base.
    const held = new ChannelDeltas();
    const [c, d, e] = documents(3);
    held.next("s", 1, c!);
    held.next("s", 2, d!);
    held.next("s", 3, e!);
    expect(held.size.bytes).toBe(c!.length + d!.length + e!.length);
    const small = new ChannelDeltas(limits({ maxPayloadBytes: 100 }));
    small.next("s", 1, a!);
    expect(small.size.channels).toBe(0);
    expect(small.next("s", 2, b!).baseSeq).toBe(0);
  });

  it("deltas — a payload over maxPayloadBytes is full even when the channel holds a base (regression: it was made a delta of a smaller one)", () => {
    const [a] = documents(1);
    const grown = enc.encode(`${new TextDecoder().decode(a!).slice(0, -1)},"log":"${"x".repeat(a!.length)}"}`);
    const deltas = new ChannelDeltas(limits({ maxPayloadBytes: a!.length }));
    const sub = new DeltaSubscription();
    expect(sub.next(deltas.next("s", 1, a!))).toBe("full");
    const m = deltas.next("s", 2, grown);
    expect([m.baseSeq, m.delta(), sub.next(m)]).toEqual([0, undefined, "full"]);
    // With the bound above it the same payload is a delta (the base's text is its prefix): the bound decides.
    const wide = new ChannelDeltas(limits({ maxPayloadBytes: grown.length }));
    wide.next("s", 1, a!);
    expect(wide.next("s", 2, grown).delta()!.length).toBeLessThan(grown.length);
  });

  it("deltas — a channel idle past idleMs is forgotten when the worker next looks", () => {
    let now = 0;
    const deltas = new ChannelDeltas(limits({ idleMs: 1_000 }), () => now);
    const [a, b] = documents(2);
    deltas.next("quiet", 1, a!);
    now = 500;
    deltas.next("busy", 2, a!);
    now = 1_200;
    deltas.sweep();
    expect(deltas.size.channels).toBe(1);
    expect(deltas.next("quiet", 3, b!).baseSeq).toBe(0);
    expect(deltas.next("busy", 4, b!).baseSeq).toBe(2);
  });

  it("deltas — a subscription remembers at most its bound of channels; a forgotten one gets a full message", () => {
    const deltas = new ChannelDeltas();
    const sub = new DeltaSubscription(2);
    const [a, b] = documents(2);
    for (const c of ["c1", "c2", "c3"]) sub.next(deltas.next(c, c === "c1" ? 1 : c === "c2" ? 2 : 3, a!));
    expect(sub.channels).toBe(2);
    expect(sub.next(deltas.next("c1", 4, b!))).toBe("full");
    expect(sub.next(deltas.next("c3", 5, b!))).toBe("delta");
  });
});
