import { describe, expect, it } from "vitest";
import type { BrokerMessage, LastValuePage } from "../../src/broker/broker.js";
import { sendLastValues } from "../../src/fanout/last-values.js";
import { pageOf } from "../../src/broker/jetstream/replay.js";
import type { FanoutSocket } from "../../src/fanout/socket.js";
import { JSON_CODEC } from "../../src/protocol/codecs.js";

const msg = (channel: string, seq: number): BrokerMessage => ({ channel, seq, ts: 1, payload: Buffer.from(`{"s":${seq}}`) });

/** A fake socket: records frames, reports a buffer size the test sets, keeps drain waiters. */
function fakeSocket(): FanoutSocket & { sent: string[]; buffered: number; drained: (() => void)[]; result: number } {
  const s = {
    closed: false,
    codec: JSON_CODEC,
    sent: [] as string[],
    buffered: 0,
    drained: [] as (() => void)[],
    result: 1,
    send(f: Uint8Array | string) {
      s.sent.push(Buffer.from(f).toString());
      return s.result;
    },
    cork: (fn: () => void) => fn(),
    bufferedAmount: () => s.buffered,
    joinTopic: () => undefined,
    onDrained: (fn: () => void) => void s.drained.push(fn),
  };
  return s;
}

/** A replay whose pages are given; records the `after` of each call. */
function pages(...list: LastValuePage[]) {
  const calls: { upTo: number; after: number }[] = [];
  return {
    calls,
    lastPerSubject: async (_p: string, upTo: number, after: number) => {
      calls.push({ upTo, after });
      return list.shift() ?? { messages: [], more: false };
    },
  };
}

describe("last values — paging to one socket", () => {
  it("asks page after page from the last seq sent, always up to the same seq, and waits for drain when the socket is full", async () => {
    const sock = fakeSocket();
    const replay = pages({ messages: [msg("p.a", 3), msg("p.b", 7)], more: true }, { messages: [msg("p.c", 9)], more: false });
    sock.buffered = 1_000;
    const done = sendLastValues(sock, replay, "p.*", 10, 100, () => false);
    await new Promise((r) => setImmediate(r));
    expect(sock.sent).toHaveLength(2);
    expect(sock.drained).toHaveLength(1); // waiting: the buffer is over the limit
    expect(replay.calls).toEqual([{ upTo: 10, after: 0 }]);
    sock.buffered = 0;
    sock.drained.shift()!();
    expect(await done).toEqual({ sent: 3, stopped: false });
    expect(replay.calls).toEqual([
      { upTo: 10, after: 0 },
      { upTo: 10, after: 7 },
    ]);
    expect(sock.sent.map((f) => JSON.parse(f) as { channel: string; sub: string; seq: number })).toMatchObject([
      { channel: "p.a", sub: "p.*", seq: 3 },
      { channel: "p.b", seq: 7 },
      { channel: "p.c", seq: 9 },
    ]);
  });

  it("stops when the subscription ends between pages, and reports frames the socket dropped", async () => {
    let ended = false;
    const sock = fakeSocket();
    const replay = pages({ messages: [msg("p.a", 1)], more: true }, { messages: [msg("p.b", 2)], more: false });
    const r = sendLastValues(
      sock,
      { lastPerSubject: async (pattern, upTo, after) => ((ended = true), replay.lastPerSubject(pattern, upTo, after)) },
      "p.*",
      5,
      100,
      () => ended,
    );
    expect(await r).toEqual({ sent: 0, stopped: true });
    const full = fakeSocket();
    full.result = 2;
    expect(await sendLastValues(full, pages({ messages: [msg("p.a", 1), msg("p.b", 2)], more: false }), "p.*", 5, 100, () => false)).toEqual({
      sent: 0,
      stopped: true,
      dropped: true,
    });
  });
});

describe("last values — a page whose channels retention emptied", () => {
  it("last values — a page may end past its last message (cursor): the next page is asked after the cursor, even after an empty page", async () => {
    const sock = fakeSocket();
    const replay = pages(
      { messages: [msg("p.a", 3)], more: true, cursor: 9 },
      { messages: [], more: true, cursor: 15 },
      { messages: [msg("p.d", 20)], more: false },
    );
    expect(await sendLastValues(sock, replay, "p.*", 30, 100, () => false)).toEqual({ sent: 2, stopped: false });
    expect(replay.calls.map((c) => c.after)).toEqual([0, 9, 15]);
  });
});

describe("last values — a client that does not drain", () => {
  it("last values — a snapshot not taken within its deadline fails with a temporary slow_consumer, having sent what was drained", async () => {
    const sock = fakeSocket();
    sock.buffered = 1_000; // never drains
    const replay = pages({ messages: [msg("p.a", 3)], more: true }, { messages: [msg("p.b", 7)], more: false });
    const err = await sendLastValues(sock, replay, "p.*", 10, 100, () => false, 30).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: "slow_consumer", temporary: true });
    expect(sock.sent).toHaveLength(1);
    expect(replay.calls).toEqual([{ upTo: 10, after: 0 }]);
  });
});

describe("last values — pageOf (a scan's result, paged)", () => {
  const size = (m: { payload: Uint8Array }) => m.payload.byteLength;
  const stored = (n: number, size: (i: number) => number) =>
    Array.from({ length: n }, (_, i) => ({ seq: 10 + 3 * i, payload: new Uint8Array(size(i)), channel: `c${i}` }));

  it("last values — pages by count and bytes; following `after` = the last seq covers every entry once", () => {
    const all = stored(1_100, (i) => (i % 7 === 0 ? 900 : 100));
    const seen: number[] = [];
    let after = 0;
    let pages = 0;
    for (;;) {
      const p = pageOf(all, after, 250, 20_000, size);
      pages++;
      expect(p.messages.length).toBeLessThanOrEqual(250);
      expect(p.messages.reduce((n, m) => n + m.payload.byteLength, 0)).toBeLessThanOrEqual(20_000);
      seen.push(...p.messages.map((m) => m.seq));
      if (!p.more) break;
      after = p.messages.at(-1)!.seq;
    }
    expect(seen).toEqual(all.map((m) => m.seq));
    expect(pages).toBeGreaterThan(1_100 / 250);
  });

  it("last values — a message larger than the byte bound makes a page of its own; nothing after the end", () => {
    const all = stored(3, (i) => (i === 1 ? 5_000 : 10));
    expect(pageOf(all, 0, 10, 100, size).messages.map((m) => m.seq)).toEqual([10]);
    expect(pageOf(all, 10, 10, 100, size)).toMatchObject({ messages: [{ seq: 13 }], more: true });
    expect(pageOf(all, 13, 10, 100, size)).toMatchObject({ messages: [{ seq: 16 }], more: false });
    expect(pageOf(all, 16, 10, 100, size)).toEqual({ messages: [], more: false });
    expect(pageOf(all, 11, 10, 100, size).messages[0]!.seq).toBe(13); // a cursor between entries
  });
});
