// subscribeEvents against a fake EventSource: each seq once, in order per channel — a message the gateway
// repaired late (older than ones already delivered on other channels) reaches the handler; a repeat does not.
import { describe, expect, it } from "vitest";
import { subscribeEvents, type EventSourceLike } from "../src/index.js";

class FakeEventSource implements EventSourceLike {
  static last?: FakeEventSource;
  readyState = 1;
  onopen: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: { data: string; lastEventId?: string }) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  readonly listeners = new Map<string, (ev: { data: string; lastEventId?: string }) => void>();
  constructor(readonly url: string) {
    FakeEventSource.last = this;
  }
  addEventListener(type: string, l: (ev: { data: string; lastEventId?: string }) => void): void {
    this.listeners.set(type, l);
  }
  close(): void {
    this.readyState = 2;
  }
  message(channel: string, seq: number, id: number): void {
    this.onmessage?.({ data: JSON.stringify({ op: "msg", channel, seq, data: { seq } }), lastEventId: `E:${id}` });
  }
}

describe("sse client — per-channel order", () => {
  it("sse client — a late-repaired message of one channel after newer ones of another is delivered; a repeat on its channel is not", async () => {
    const got: [string, number][] = [];
    const sub = subscribeEvents("http://127.0.0.1:1", "t.*", (m) => got.push([m.channel, m.seq]), { EventSource: FakeEventSource });
    await new Promise((r) => setTimeout(r, 0));
    const es = FakeEventSource.last!;
    es.message("t.a", 1, 1);
    es.message("t.b", 3, 3);
    es.message("t.a", 2, 3); // repaired late: the gateway gives it the position as its id
    es.message("t.b", 3, 3); // a repeat
    es.message("t.a", 1, 3); // a repeat
    expect(got).toEqual([
      ["t.a", 1],
      ["t.b", 3],
      ["t.a", 2],
    ]);
    expect(sub.lastSeq).toBe(3);
    expect(sub.lastEventId).toBe("E:3");
    sub.close();
  });
});

describe("sse client — an operator's end", () => {
  it("sse client — err disconnected (not temporary) or unsubscribed closes the EventSource; a temporary one leaves it to reconnect", async () => {
    for (const [code, temporary, stays] of [
      ["disconnected", false, false],
      ["unsubscribed", false, false],
      ["disconnected", true, true],
    ] as const) {
      const errors: string[] = [];
      const sub = subscribeEvents("http://127.0.0.1:1", "t.*", () => undefined, { EventSource: FakeEventSource, onError: (e) => errors.push(e.code) });
      await new Promise((r) => setTimeout(r, 0));
      const es = FakeEventSource.last!;
      es.listeners.get("err")!({ data: JSON.stringify({ code, message: "by the operator", temporary }) });
      expect(errors).toEqual([code]);
      expect(es.readyState === 1).toBe(stays);
      sub.close();
    }
  });
});
