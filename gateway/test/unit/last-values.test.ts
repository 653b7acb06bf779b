import { describe, expect, it } from "vitest";
import type { BrokerMessage, LastValuePage } from "../../src/broker/broker.js";
import { sendLastValues } from "../../src/fanout/last-values.js";
import type { FanoutSocket } from "../../src/fanout/socket.js";

const msg = (channel: string, seq: number): BrokerMessage => ({ channel, seq, ts: 1, payload: Buffer.from(`{"s":${seq}}`) });

/** A fake socket: records frames, reports a buffer size the test sets, keeps drain waiters. */
function fakeSocket(): FanoutSocket & { sent: string[]; buffered: number; drained: (() => void)[]; result: number } {
  const s = {
    closed: false,
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
    const r = sendLastValues(sock, { lastPerSubject: async (...a) => ((ended = true), replay.lastPerSubject(...a)) }, "p.*", 5, 100, () => ended);
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
