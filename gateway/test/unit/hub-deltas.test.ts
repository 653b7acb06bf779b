// The hub's delta path (fanout/hub.ts deliverDeltas, fanout/delta-socket.ts): each message's delta made once
// per worker whatever the number of delta subscriptions, its frame once per codec, the same bytes to every
// socket of a codec; a join to live starts each channel over; a recreated stream forgets every base. Driven
// in process with a fake broker feed, a fake uWS app and fake sockets.
import client from "prom-client";
import { describe, expect, it } from "vitest";
import { DeltaSocket } from "../../src/fanout/delta-socket.js";
import { FanoutHub } from "../../src/fanout/hub.js";
import type { FanoutSocket, TopicPublisher } from "../../src/fanout/socket.js";
import { createLogger } from "../../src/log.js";
import { createMetrics } from "../../src/metrics/metrics.js";
import { fakeLiveBroker } from "#testkit/fake-feed.js";
import type { Codec } from "../../src/protocol/codec.js";
import { JSON_CODEC, MSGPACK_CODEC } from "../../src/protocol/codecs.js";

const app: TopicPublisher = { publish: () => true, numSubscribers: () => 0 };

/** A socket that keeps what it was sent. */
function fakeSocket(codec: Codec): FanoutSocket & { sent: Uint8Array[] } {
  const sent: Uint8Array[] = [];
  return {
    sent,
    codec,
    closed: false,
    send: (f) => {
      sent.push(typeof f === "string" ? Buffer.from(f) : f);
      return 1;
    },
    cork: (fn) => fn(),
    bufferedAmount: () => 0,
    joinTopic: () => undefined,
    onDrained: () => undefined,
  };
}

async function setup() {
  const { broker, push } = fakeLiveBroker();
  const registry = new client.Registry();
  const metrics = createMetrics(registry);
  const hub = new FanoutHub({ app, broker, metrics, log: createLogger("silent", {}), lingerMs: 1_000 });
  const feed = await hub.acquire("s.*");
  const doc = (n: number) => Buffer.from(JSON.stringify({ n, text: "a state document that mostly stays the same ".repeat(6) }));
  const send = (channel: string, seq: number) => push({ channel, seq, ts: seq, payload: doc(seq) });
  const made = async () => (await registry.getSingleMetric("fanout_deltas_made_total")!.get()).values[0]?.value ?? 0;
  const receiver = (codec: Codec) => {
    const s = fakeSocket(codec);
    const r = new DeltaSocket(s, () => feed);
    r.joinTopic();
    return { s, r };
  };
  return { hub, send, made, receiver };
}

/** A delta frame, in either codec: only those name the key `delta` (the test's documents do not contain it). */
const isDelta = (frame: Uint8Array): boolean => Buffer.from(frame).includes("delta");

describe("hub deltas", () => {
  it("hub — one delta per message for every delta subscription; one frame per codec, shared by its sockets", async () => {
    const { send, made, receiver } = await setup();
    const [a, b, m] = [receiver(JSON_CODEC), receiver(JSON_CODEC), receiver(MSGPACK_CODEC)];
    for (let seq = 1; seq <= 4; seq++) send("s.x", seq);
    expect(await made()).toBe(3);
    for (const { s } of [a, b, m]) expect(s.sent.map(isDelta)).toEqual([false, true, true, true]);
    for (let i = 0; i < 4; i++) expect(a.s.sent[i]).toBe(b.s.sent[i]); // the same buffer: built once
    expect(m.s.sent[1]).not.toBe(a.s.sent[1]);
  });

  it("hub — a join to live (resume, hand-off, return from a pause) starts every channel full; so does a recreated stream", async () => {
    const { hub, send, receiver } = await setup();
    const { s, r } = receiver(JSON_CODEC);
    send("s.x", 1);
    send("s.y", 2);
    send("s.x", 3);
    r.leave();
    send("s.x", 4); // not sent: it paused
    r.joinTopic();
    send("s.x", 5);
    send("s.x", 6);
    hub.streamRecreated("FANOUT_CHANNELS");
    send("s.x", 7);
    send("s.x", 8);
    expect(s.sent.map(isDelta)).toEqual([false, false, true, false, true, false, true]);
  });

  it("hub — a frame sent outside the delta path (a late repair) becomes the client's base: the next message is full", async () => {
    const { send, receiver } = await setup();
    const { s, r } = receiver(JSON_CODEC);
    send("s.x", 1);
    send("s.x", 2);
    r.send(Buffer.from('{"op":"msg","channel":"s.x","sub":"s.*","seq":1,"ts":1,"data":{}}'), 1); // as LateGroup does
    send("s.x", 3);
    send("s.x", 4);
    expect(s.sent.map(isDelta)).toEqual([false, true, false, false, true]);
  });
});
