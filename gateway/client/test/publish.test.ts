import { describe, expect, it } from "vitest";
import { base64Decode, base64Encode } from "../src/deltas.js";
import { GatewayError } from "../src/errors.js";
import { batchResults, newMsgId, Outbox, pubFrame, type Pub } from "../src/publish.js";
import type { PublishResult } from "../src/types.js";

const pub = (box: Outbox, n: number, open: boolean) =>
  box.add<PublishResult>((resolve, reject) => ({ channel: "a.b", data: n, msgId: `m${n}`, resolve, reject }) satisfies Pub, open);

describe("publish queue", () => {
  it("publish queue — holds at most `limit` while disconnected, any number while open, in call order", async () => {
    const box = new Outbox(2);
    const a = pub(box, 1, false);
    const b = pub(box, 2, false);
    const c = pub(box, 3, false);
    await expect(c.promise).rejects.toMatchObject({ code: "queue_full", temporary: true });
    expect(c.pub).toBeUndefined();
    const d = pub(box, 4, true); // open: goes out at once, not bounded
    expect([...box].map((p) => pubFrame(p))).toEqual([1, 2, 4].map((n) => ({ op: "pub", channel: "a.b", data: n, msgId: `m${n}` })));
    box.settle(b.pub!, { op: "ok", seq: 8, duplicate: true });
    box.settle(a.pub!, { op: "err", code: "forbidden", message: "no", temporary: false });
    await expect(b.promise).resolves.toEqual({ seq: 8, duplicate: true });
    await expect(a.promise).rejects.toMatchObject({ code: "forbidden", temporary: false });
    expect(box.size).toBe(1);
    box.rejectAll(new GatewayError("closed", "client closed"));
    await expect(d.promise).rejects.toMatchObject({ code: "closed" });
    expect(box.size).toBe(0);
  });

  it("publish queue — a batch is one entry, its frame carries every msgId, and its results keep item order with per-item errors", async () => {
    const box = new Outbox(1);
    const batch = [
      { channel: "a.1", data: 1, msgId: "x" },
      { channel: "a.2", data: 2, msgId: "y" },
    ];
    const r = box.add<unknown>((resolve, reject) => ({ batch, resolve, reject }), false);
    expect(pubFrame(r.pub!)).toEqual({ op: "pub", batch });
    box.settle(r.pub!, { op: "ok", results: [{ seq: 3 }, { error: "forbidden", message: "no pub right", temporary: false }] });
    const [ok, bad] = (await r.promise) as [unknown, { error: GatewayError }];
    expect(ok).toEqual({ seq: 3, duplicate: false });
    expect(bad.error).toBeInstanceOf(GatewayError);
    expect(bad.error).toMatchObject({ code: "forbidden", temporary: false });
    expect(batchResults([{ op: "", seq: 1, duplicate: true }])).toEqual([{ seq: 1, duplicate: true }]);
  });

  it("publish queue — bytes go in base64 with enc and their type on fanout.v1, as they are on fanout.v1.msgpack; JSON stays as it was", () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff]);
    const one: Pub = { channel: "files.x", data: png, msgId: "m", type: "image/png", resolve: () => undefined, reject: () => undefined };
    expect(pubFrame(one)).toEqual({ op: "pub", channel: "files.x", enc: "base64", data: "iVBORwD/", type: "image/png", msgId: "m" });
    expect(pubFrame(one, true)).toEqual({ op: "pub", channel: "files.x", data: png, type: "image/png", msgId: "m" });
    const batch = [
      { channel: "a", data: new Uint8Array([1]), msgId: "x" },
      { channel: "b", data: { n: 1 }, msgId: "y", ttl: "30s", type: "ignored/for-json" },
    ];
    const frame = pubFrame({ batch, resolve: () => undefined, reject: () => undefined });
    expect(frame).toEqual({
      op: "pub",
      batch: [
        { channel: "a", enc: "base64", data: "AQ==", type: "application/octet-stream", msgId: "x" },
        { channel: "b", data: { n: 1 }, msgId: "y", ttl: "30s" },
      ],
    });
    // Every padding length, and every byte value, round-trip.
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    for (let n = 0; n <= 5; n++) expect(base64Decode(base64Encode(all.subarray(0, n)))).toEqual(all.subarray(0, n));
    expect(base64Encode(all)).toBe(Buffer.from(all).toString("base64"));
  });

  it("publish queue — msgIds are unique, with or without crypto.randomUUID", () => {
    const ids = new Set(Array.from({ length: 1000 }, newMsgId));
    expect(ids.size).toBe(1000);
    const saved = Object.getOwnPropertyDescriptor(globalThis, "crypto");
    Object.defineProperty(globalThis, "crypto", { value: {}, configurable: true });
    try {
      const fallback = new Set(Array.from({ length: 1000 }, newMsgId));
      expect(fallback.size).toBe(1000);
      expect([...fallback][0]).toMatch(/^[0-9a-z]+-[0-9a-f]{32}$/);
    } finally {
      Object.defineProperty(globalThis, "crypto", saved!);
    }
  });
});
