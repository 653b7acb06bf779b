import { describe, expect, it } from "vitest";
import { BackpressureMonitor } from "../../src/ws/backpressure.js";
import { sendActivity } from "../../src/fanout/send-activity.js";
import { fanoutSocket, sendEncoded, type Socket } from "../../src/ws/session.js";
import type { Subscriptions } from "../../src/ws/subscriptions.js";
import type { Logger } from "../../src/log.js";

/** A subscribed socket whose buffer the test sets; counts how often the sweep reads it. */
function fakeSocket(buffered = 0) {
  const flow = { paused: false, cut: () => undefined };
  const data = { id: 1, flow, subs: new Map([["c", {}]]), closed: false, drainWaiters: [], codec: { binary: false }, coalesce: false };
  const sock = {
    reads: 0,
    buffered,
    sent: 0,
    getUserData: () => data,
    getBufferedAmount: () => (sock.reads++, sock.buffered),
    cork: (fn: () => void) => fn(),
    send: () => (sock.sent++, 1),
  };
  return { sock, flow };
}

function monitor(...socks: ReturnType<typeof fakeSocket>["sock"][]) {
  const paused: unknown[] = [];
  const subs = { pause: (ws: unknown) => paused.push(ws), resume: () => undefined } as unknown as Subscriptions;
  const log = { isLevelEnabled: () => false, debug: () => undefined } as unknown as Logger;
  const m = new BackpressureMonitor(new Set(socks as unknown as Socket[]), subs, { bytes: 1_000, maxBytes: 10_000, slowTimeoutMs: 1_000 }, log);
  return { m, paused };
}

describe("backpressure sweep — walks the sockets only when something was sent or is still buffered", () => {
  it("an idle worker's sockets are read once, then not again until a send", () => {
    const a = fakeSocket();
    const b = fakeSocket();
    const { m } = monitor(a.sock, b.sock);
    m.sweep();
    expect(a.sock.reads + b.sock.reads).toBe(2);
    m.sweep();
    m.sweep();
    expect(a.sock.reads + b.sock.reads).toBe(2); // nothing sent, every buffer was empty: nothing to find
    sendActivity.note();
    m.sweep();
    expect(a.sock.reads + b.sock.reads).toBe(4);
  });

  it("keeps walking while a buffer drains, and pauses a socket over the bound once a send fills it", () => {
    const a = fakeSocket(500);
    const { m, paused } = monitor(a.sock);
    m.sweep();
    m.sweep();
    expect(a.sock.reads).toBe(2); // still buffered: walked again without a send
    a.sock.buffered = 0;
    m.sweep();
    m.sweep();
    expect(a.sock.reads).toBe(3); // drained: quiet again
    a.sock.buffered = 5_000;
    sendActivity.note();
    m.sweep();
    expect(paused).toEqual([a.sock]);
  });

  it("a paused socket is watched on every walk, sends or not", () => {
    const a = fakeSocket(0);
    a.flow.paused = true;
    const { m } = monitor(a.sock);
    m.sweep();
    m.sweep();
    m.sweep();
    expect(a.sock.reads).toBe(3);
  });

  it("a reply to the socket's own frame does not wake it; a message through the fan-out view does", () => {
    const a = fakeSocket();
    const { m } = monitor(a.sock);
    m.sweep();
    sendEncoded(a.sock as unknown as Socket, '{"op":"subscribed"}');
    m.sweep();
    expect(a.sock.reads).toBe(1); // thousands of sockets subscribing do not make every worker walk its sockets
    fanoutSocket(a.sock as unknown as Socket).send('{"op":"msg"}');
    m.sweep();
    expect(a.sock.reads).toBe(2);
    expect(a.sock.sent).toBe(2);
  });
});
