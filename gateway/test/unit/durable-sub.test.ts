// DurableSub's own record of repeats: JetStream's delivery count can forget a delivery (an R1 consumer's node
// killed right after it, chaos-findings.md 7); a message at or below the highest seq this socket was sent is
// flagged `redelivered` all the same. A fake DurableApi hands deliveries in; the frames are the JSON codec's.
import { describe, expect, it } from "vitest";
import { DurableSub } from "../../src/fanout/durable-sub.js";
import type { DurableApi, DurableDelivery } from "../../src/broker/broker.js";
import type { FanoutSocket } from "../../src/fanout/socket.js";
import { JSON_CODEC } from "../../src/protocol/codecs.js";
import client from "prom-client";
import { createMetrics } from "../../src/metrics/metrics.js";

function harness() {
  const frames: Record<string, unknown>[] = [];
  const ws = {
    codec: JSON_CODEC,
    closed: false,
    send: (f: Uint8Array | string) => {
      frames.push(JSON.parse(typeof f === "string" ? f : new TextDecoder().decode(f)) as Record<string, unknown>);
      return 1;
    },
    cork: (fn: () => void) => fn(),
    bufferedAmount: () => 0,
    joinTopic: () => undefined,
    onDrained: () => undefined,
  } satisfies FanoutSocket;
  let deliver: (d: DurableDelivery) => void = () => undefined;
  const api: DurableApi = {
    bind: (_spec, on) => {
      deliver = on;
      return Promise.resolve({ stop: () => Promise.resolve() });
    },
  };
  const sub = new DurableSub(ws, { user: "u", durable: "billing", pattern: "orders", maxInflight: 10 }, createMetrics(new client.Registry()));
  const d = (seq: number, redelivered = false, deliveries = 1): DurableDelivery => ({
    seq,
    channel: "orders",
    ts: 0,
    payload: new TextEncoder().encode(`{"n":${seq}}`),
    redelivered,
    deliveries,
    ack: () => undefined,
    nak: () => undefined,
    term: () => undefined,
    working: () => undefined,
  });
  return { sub, api, frames, send: (x: DurableDelivery) => deliver(x), d };
}

describe("durable subscription", () => {
  it("durable — a seq at or below the highest sent comes flagged even when JetStream counts it first", async () => {
    const h = harness();
    await h.sub.start(h.api);
    h.send(h.d(5));
    h.send(h.d(7));
    // The consumer's node restarted with its record of 7 lost: 5 comes flagged by JetStream, 7 as a first.
    h.send(h.d(5, true, 2));
    h.send(h.d(7));
    h.send(h.d(8));
    expect(h.frames.map((f) => [f.seq, f.redelivered ?? false, f.deliveries ?? 1])).toEqual([
      [5, false, 1],
      [7, false, 1],
      [5, true, 2],
      [7, true, 2],
      [8, false, 1],
    ]);
    expect(h.frames[3]).toMatchObject({ durable: "billing", redelivered: true });
  });

  it("durable — JetStream's count is kept when it is the larger", async () => {
    const h = harness();
    await h.sub.start(h.api);
    h.send(h.d(3, true, 4));
    expect(h.frames[0]).toMatchObject({ seq: 3, redelivered: true, deliveries: 4 });
  });
});
