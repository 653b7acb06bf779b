// Coalesced frames (fanout/coalesced-frames.ts, through the hub): messages of a pattern within a window go to its
// coalesced topics as one frame per codec, in order, bounded in size, and flushed before a socket joins; the
// plain topics keep one frame per message. Driven in process with a fake uWS app and a manual clock.
import { decode, decodeMulti, encode } from "@msgpack/msgpack";
import client from "prom-client";
import { describe, expect, it } from "vitest";
import { FrameWindow, type Schedule } from "../../src/fanout/coalesced-frames.js";
import { coalescedTopic, codecTopic } from "../../src/fanout/topics.js";
import { FanoutHub } from "../../src/fanout/hub.js";
import type { FanoutSocket, TopicPublisher } from "../../src/fanout/socket.js";
import { createLogger } from "../../src/log.js";
import { createMetrics } from "../../src/metrics/metrics.js";
import { fakeLiveBroker } from "#testkit/fake-feed.js";
import { JSON_CODEC, MSGPACK_CODEC } from "../../src/protocol/codecs.js";

class FakeApp implements TopicPublisher {
  readonly subscribers = new Map<string, number>();
  readonly published: { topic: string; frame: Uint8Array }[] = [];
  publish(topic: string, frame: Uint8Array): boolean {
    this.published.push({ topic, frame });
    return true;
  }
  numSubscribers(topic: string): number {
    return this.subscribers.get(topic) ?? 0;
  }
  texts(topic: string): string[] {
    return this.published.filter((p) => p.topic === topic).map((p) => Buffer.from(p.frame).toString());
  }
}

/** A clock the test advances: timers fire only when `fire` is called. */
function manualClock() {
  const timers: { fn: () => void; cancelled: boolean }[] = [];
  const schedule: Schedule = (fn) => {
    const t = { fn, cancelled: false };
    timers.push(t);
    return { cancel: () => void (t.cancelled = true) };
  };
  const fire = () => {
    for (const t of timers.splice(0)) if (!t.cancelled) t.fn();
  };
  const pending = () => timers.filter((t) => !t.cancelled).length;
  return { schedule, fire, pending };
}

function setup(windowMs = 25, maxBytes = 65_536) {
  const app = new FakeApp();
  const clock = manualClock();
  const { broker, push } = fakeLiveBroker();
  const policy = { windowOf: () => windowMs, maxBytes, schedule: clock.schedule };
  const hub = new FanoutHub({ app, broker, metrics: createMetrics(new client.Registry()), log: createLogger("silent", {}), lingerMs: 1_000, coalesce: policy });
  const send = (seq: number, payload = `{"n":${seq}}`) => push({ channel: "a.b", seq, ts: seq, payload: Buffer.from(payload) });
  return { app, hub, send, clock };
}

const line = (seq: number, payload = `{"n":${seq}}`) => `{"op":"msg","channel":"a.b","sub":"a.*","seq":${seq},"ts":${seq},"data":${payload}}`;

describe("coalesced frames", () => {
  it("coalesce — a window's messages go to the coalesced topic as one newline-joined frame, the plain topic one frame each", async () => {
    const { app, hub, send, clock } = setup();
    const feed = await hub.acquire("a.*");
    const ct = coalescedTopic(feed.topic);
    app.subscribers.set(feed.topic, 1);
    app.subscribers.set(ct, 2_000);
    send(1);
    send(2);
    send(3);
    expect(app.texts(feed.topic)).toEqual([line(1), line(2), line(3)]);
    expect(app.texts(ct)).toEqual([]);
    clock.fire();
    expect(app.texts(ct)).toEqual([[line(1), line(2), line(3)].join("\n")]);
    // A window with one message sends that message's frame as it is.
    send(4);
    clock.fire();
    expect(app.texts(ct).at(-1)).toBe(line(4));
    expect(clock.pending()).toBe(0);
  });

  it("coalesce — a pretty-printed payload stays byte for byte; frames split at `}\\n{` only", async () => {
    const { app, hub, send, clock } = setup();
    const feed = await hub.acquire("a.*");
    const ct = coalescedTopic(feed.topic);
    app.subscribers.set(ct, 1);
    const pretty = '{\n  "a": [\n    {"b": 1},\n    {"c": "x\\ny"}\n  ]\n}';
    send(1, pretty);
    send(2);
    clock.fire();
    const [frame] = app.texts(ct);
    expect(frame).toBe(`${line(1, pretty)}\n${line(2)}`);
    const parts = frame!.split("}\n{");
    expect(parts).toHaveLength(2);
    expect(JSON.parse(`${parts[0]}}`)).toMatchObject({ seq: 1, data: { a: [{ b: 1 }, { c: "x\ny" }] } });
  });

  it("coalesce — msgpack sockets get one array of the msg maps, the bytes the library writes for that array", async () => {
    const { app, hub, send, clock } = setup();
    const feed = await hub.acquire("a.*");
    const ct = coalescedTopic(codecTopic(feed.topic, MSGPACK_CODEC));
    app.subscribers.set(ct, 5);
    for (let s = 1; s <= 20; s++) send(s);
    clock.fire();
    const frames = app.published.filter((p) => p.topic === ct);
    expect(frames).toHaveLength(1);
    const maps = decode(frames[0]!.frame) as { seq: number }[];
    expect(maps.map((m) => m.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(Buffer.from(frames[0]!.frame)).toEqual(Buffer.from(encode(maps)));
    // The JSON coalesced topic had nobody: nothing was held or built for it.
    expect(app.texts(coalescedTopic(feed.topic))).toEqual([]);
  });

  it("coalesce — the msgpack array header for 16 and 65,536 maps is the library's", () => {
    for (const n of [15, 16, 65_535, 65_536]) {
      const one = encode({ op: "msg", seq: 1 });
      const out: Uint8Array[] = [];
      const c = new FrameWindow(25, 1 << 30, (_c, f) => void out.push(f), manualClock().schedule);
      for (let i = 0; i < n; i++) c.add(MSGPACK_CODEC, one);
      c.flush();
      const expected = encode(Array.from({ length: n }, () => ({ op: "msg", seq: 1 })));
      expect(Buffer.from(out[0]!).subarray(0, 6)).toEqual(Buffer.from(expected).subarray(0, 6));
      expect(out[0]!.length).toBe(expected.length);
      expect([...decodeMulti(out[0]!)]).toHaveLength(1);
    }
  });

  it("coalesce — a frame is flushed before it would pass the size bound; one over the bound goes alone, in order", async () => {
    const { app, hub, send, clock } = setup(25, line(1).length * 2 + 2);
    const feed = await hub.acquire("a.*");
    const ct = coalescedTopic(feed.topic);
    app.subscribers.set(ct, 1);
    send(1);
    send(2);
    expect(app.texts(ct)).toEqual([]);
    send(3); // would pass the bound: 1 and 2 go now
    expect(app.texts(ct)).toEqual([`${line(1)}\n${line(2)}`]);
    const big = `{"big":"${"x".repeat(200)}"}`;
    send(4, big); // over the bound alone: 3 first, then 4 by itself
    expect(app.texts(ct)).toEqual([`${line(1)}\n${line(2)}`, line(3), line(4, big)]);
    send(5);
    clock.fire();
    expect(app.texts(ct).at(-1)).toBe(line(5));
  });

  it("coalesce — a socket joining the coalesced topic gets nothing from before its join: what is held goes out first", async () => {
    const { app, hub, send, clock } = setup();
    const feed = await hub.acquire("a.*");
    const ct = coalescedTopic(feed.topic);
    app.subscribers.set(ct, 1);
    send(1);
    send(2);
    const order: string[] = [];
    const plainSock = { coalesce: false, joinTopic: () => undefined } as unknown as FanoutSocket;
    feed.join(plainSock);
    expect(app.texts(ct)).toEqual([]); // a socket on the plain topic: nothing held is sent early for it
    const sock = {
      coalesce: true,
      joinTopic: (topic: string, coalesced?: boolean) => {
        order.push(`join ${coalesced ? "coalesced" : "plain"} after ${app.texts(ct).length} frames`);
        app.subscribers.set(ct, 2);
      },
    } as unknown as FanoutSocket;
    feed.join(sock);
    expect(order).toEqual(["join coalesced after 1 frames"]);
    expect(app.texts(ct)).toEqual([`${line(1)}\n${line(2)}`]);
    send(3);
    clock.fire();
    expect(app.texts(ct)).toEqual([`${line(1)}\n${line(2)}`, line(3)]);
  });

  it("coalesce — window off: one frame per message, and sockets join the plain topic", async () => {
    const { app, hub, send, clock } = setup(0);
    const feed = await hub.acquire("a.*");
    app.subscribers.set(feed.topic, 1);
    app.subscribers.set(coalescedTopic(feed.topic), 1);
    send(1);
    send(2);
    expect(app.texts(feed.topic)).toEqual([line(1), line(2)]);
    expect(app.texts(coalescedTopic(feed.topic))).toEqual([]);
    expect(clock.pending()).toBe(0);
    let joined: boolean | undefined;
    feed.join({ joinTopic: (_t: string, c?: boolean) => void (joined = c) } as unknown as FanoutSocket);
    expect(joined).toBe(false);
  });

  it("coalesce — a JSON and a msgpack coalesced topic each get their codec's frame from one window", async () => {
    const { app, hub, send, clock } = setup();
    const feed = await hub.acquire("a.*");
    app.subscribers.set(coalescedTopic(feed.topic), 1);
    app.subscribers.set(coalescedTopic(codecTopic(feed.topic, MSGPACK_CODEC)), 1);
    send(1);
    send(2);
    clock.fire();
    expect(app.published.map((p) => p.topic).sort()).toEqual([coalescedTopic(feed.topic), coalescedTopic(codecTopic(feed.topic, MSGPACK_CODEC))].sort());
    expect(JSON_CODEC.batch([Buffer.from("{}"), Buffer.from("{}")]).toString()).toBe("{}\n{}");
  });
});
