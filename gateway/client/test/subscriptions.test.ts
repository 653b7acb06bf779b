import { describe, expect, it } from "vitest";
import { acceptOk, acceptSeq, autoSub, newSub, subscribeFrame, type Sub } from "../src/subscriptions.js";
import { deferred } from "../src/util.js";
import type { SubscribeInfo, SubscribeOptions } from "../src/types.js";

const make = (channel: string, options: SubscribeOptions = {}, auto?: Sub): Sub =>
  newSub(
    channel,
    () => undefined,
    options,
    deferred<SubscribeInfo>(),
    () => undefined,
    auto,
  );

describe("subscriptions — the resume frame", () => {
  it("subscriptions — before any delivery the frame asks for the original from (a time as ISO); after one, seq last+1 with the epoch", () => {
    const s = make("a.*", { from: { time: new Date(Date.UTC(2026, 0, 2)) } });
    expect(subscribeFrame(s)).toEqual({ frame: { op: "sub", channel: "a.*", from: { time: "2026-01-02T00:00:00.000Z" } } });
    expect(subscribeFrame(make("a.*", { from: { seq: 7 } }))).toEqual({ frame: { op: "sub", channel: "a.*", from: { seq: 7 } }, expectedSeq: 7 });
    expect(subscribeFrame(make("a.*"))).toEqual({ frame: { op: "sub", channel: "a.*" } });
    acceptOk(s, { op: "ok", epoch: "E1" }, undefined);
    expect(acceptSeq(s, "a.x", 41)).toBe(true);
    expect(subscribeFrame(s)).toEqual({ frame: { op: "sub", channel: "a.*", from: { seq: 42, epoch: "E1" } }, expectedSeq: 42 });
  });

  it("subscriptions — a durable sends its name, ack and maxInflight and never a from; presence info only when entering", () => {
    expect(subscribeFrame(make("d.x", { durable: "billing", ack: true, maxInflight: 5 })).frame).toEqual({
      op: "sub",
      channel: "d.x",
      durable: "billing",
      ack: true,
      maxInflight: 5,
    });
    expect(subscribeFrame(make("r.1", { presence: "watch", info: { n: 1 } })).frame).toEqual({ op: "sub", channel: "r.1", presence: "watch" });
    expect(subscribeFrame(make("r.1", { presence: "member", info: { n: 1 } })).frame).toEqual({
      op: "sub",
      channel: "r.1",
      presence: "member",
      info: { n: 1 },
    });
  });

  it("subscriptions — a server-side subscription resumes from its announced seq, and a subscribe() of its pattern takes its place", () => {
    const auto = autoSub(
      { op: "sub", auto: true, channel: "n.u1", seq: 9, epoch: "E" },
      () => undefined,
      () => undefined,
    );
    expect(subscribeFrame(auto).frame).toEqual({ op: "sub", channel: "n.u1", from: { seq: 10, epoch: "E" } });
    expect(acceptSeq(auto, "n.u1", 9)).toBe(false);
    expect(acceptSeq(auto, "n.u1", 10)).toBe(true);
    const mine = make("n.u1", {}, auto);
    expect(mine.lastSeq).toBe(10);
    expect(subscribeFrame(mine).frame).toEqual({ op: "sub", channel: "n.u1", from: { seq: 11, epoch: "E" } });
    expect(acceptSeq(mine, "n.u1", 10)).toBe(false);
    // A durable of the same pattern starts afresh.
    expect(make("n.u1", { durable: "d" }, auto).lastSeq).toBe(0);
  });
});

describe("subscriptions — the server's ok", () => {
  it("subscriptions — a truncated resume is a gap from the expected seq; an epochChanged one also starts the seqs over", () => {
    const s = make("a.*");
    acceptSeq(s, "a.x", 5);
    expect(acceptOk(s, { op: "ok", epoch: "E1", truncated: true, firstSeq: 9, lastSeq: 20 }, 6)).toEqual({
      info: { epoch: "E1", firstSeq: 9, lastSeq: 20, truncated: true },
      gap: { type: "gap", channel: "a.*", expectedSeq: 6, firstSeq: 9 },
    });
    expect(s.lastSeq).toBe(5);
    const r = acceptOk(s, { op: "ok", epoch: "E2", epochChanged: true, truncated: true, firstSeq: 1, lastSeq: 3 }, 6);
    expect(r.gap).toEqual({ type: "gap", channel: "a.*", expectedSeq: 6, firstSeq: 1, epochChanged: true });
    expect(r.info.epochChanged).toBe(true);
    expect([s.lastSeq, s.floor, s.lastByChannel.size, s.epoch]).toEqual([0, 0, 0, "E2"]);
    expect(acceptSeq(s, "a.x", 1)).toBe(true);
  });

  it("subscriptions — no gap without an expected seq (a live or `last` start), and the presence client id is kept", () => {
    const s = make("r.1", { presence: true });
    expect(acceptOk(s, { op: "ok", truncated: true, firstSeq: 3, client: "c9" }, undefined)).toEqual({ info: { firstSeq: 3, truncated: true, client: "c9" } });
    expect(s.client).toBe("c9");
  });
});

describe("subscriptions — duplicates", () => {
  it("subscriptions — order is per channel: a late seq of one channel passes after newer ones of another; repeats do not", () => {
    const s = make("w.*");
    const got = (
      [
        ["w.a", 5],
        ["w.b", 7],
        ["w.a", 6],
        ["w.b", 7],
        ["w.a", 5],
        ["w.b", 8],
      ] as const
    ).filter(([ch, seq]) => acceptSeq(s, ch, seq));
    expect(got).toEqual([
      ["w.a", 5],
      ["w.b", 7],
      ["w.a", 6],
      ["w.b", 8],
    ]);
    expect(s.lastSeq).toBe(8);
  });

  it("subscriptions — past the tracked-channel bound the oldest channel is forgotten and its last seq becomes the floor", () => {
    const s = make("w.*");
    expect(acceptSeq(s, "w.a", 10, 2)).toBe(true);
    expect(acceptSeq(s, "w.b", 4, 2)).toBe(true);
    expect(acceptSeq(s, "w.c", 12, 2)).toBe(true); // w.a forgotten: floor 10
    expect([...s.lastByChannel.keys()]).toEqual(["w.b", "w.c"]);
    expect(s.floor).toBe(10);
    expect(acceptSeq(s, "w.a", 9, 2)).toBe(false); // at or below the floor: old
    expect(acceptSeq(s, "w.a", 11, 2)).toBe(true);
  });
});
