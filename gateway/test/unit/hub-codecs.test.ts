// The hub encodes each live message once per worker per codec in use (fanout/hub.ts), lazily: only for a
// codec whose sockets listen on the pattern's topic, never once per socket. Driven in process with a fake
// broker feed and a fake uWS app that counts what is published to which topic.
import client from "prom-client";
import { describe, expect, it } from "vitest";
import { FanoutHub } from "../../src/fanout/hub.js";
import type { LiveListener } from "../../src/fanout/routes.js";
import { codecTopic } from "../../src/fanout/topics.js";
import type { TopicPublisher } from "../../src/fanout/socket.js";
import { createLogger } from "../../src/log.js";
import { createMetrics } from "../../src/metrics/metrics.js";
import { fakeLiveBroker } from "#testkit/fake-feed.js";
import type { MsgFrames } from "../../src/protocol/codec.js";
import { CODECS, JSON_CODEC } from "../../src/protocol/codecs.js";

/** A uWS app as the hub sees it: subscribers per topic, and every publish recorded. */
class FakeApp implements TopicPublisher {
  readonly subscribers = new Map<string, number>();
  readonly published: { topic: string; frame: Uint8Array; isBinary: boolean }[] = [];
  publish(topic: string, frame: Uint8Array, isBinary: boolean): boolean {
    this.published.push({ topic, frame, isBinary });
    return true;
  }
  numSubscribers(topic: string): number {
    return this.subscribers.get(topic) ?? 0;
  }
}

function setup() {
  const app = new FakeApp();
  const { broker, push } = fakeLiveBroker();
  const hub = new FanoutHub({ app, broker, metrics: createMetrics(new client.Registry()), log: createLogger("silent", {}), lingerMs: 1_000 });
  const send = (seq: number) => push({ channel: "a.b", seq, ts: seq, payload: Buffer.from(`{"n":${seq}}`) });
  return { app, hub, send };
}

describe("hub codecs", () => {
  it("hub — nothing is encoded or published while no socket of any codec listens and no listener is there", async () => {
    const { app, hub, send } = setup();
    await hub.acquire("a.*");
    send(1);
    expect(app.published).toEqual([]);
  });

  it("hub — one publish per codec whose topic has sockets, whatever their number; listeners get the same frames", async () => {
    const { app, hub, send } = setup();
    const feed = await hub.acquire("a.*");
    app.subscribers.set(feed.topic, 500);
    const seen: MsgFrames[] = [];
    const l: LiveListener = { onLive: (_s, m) => void seen.push(m) };
    feed.routes.add("live", l);
    send(1);
    expect(app.published).toHaveLength(1);
    const [p] = app.published;
    expect(p?.topic).toBe(feed.topic);
    expect(p?.isBinary).toBe(false);
    expect(Buffer.from(p?.frame ?? []).toString()).toBe('{"op":"msg","channel":"a.b","sub":"a.*","seq":1,"ts":1,"data":{"n":1}}');
    // The listener's JSON frame is the very buffer the topic got: encoded once.
    expect(seen[0]?.frame(JSON_CODEC)).toBe(p?.frame);
    for (const c of CODECS.slice(1)) {
      app.subscribers.set(codecTopic(feed.topic, c), 3);
      send(2);
      const last = app.published.slice(-2);
      expect(last.map((x) => x.topic).sort()).toEqual([feed.topic, codecTopic(feed.topic, c)].sort());
      expect(last.find((x) => x.topic !== feed.topic)?.isBinary).toBe(c.binary);
      app.subscribers.delete(feed.topic);
      app.published.length = 0;
      send(3);
      expect(app.published.map((x) => x.topic)).toEqual([codecTopic(feed.topic, c)]);
      app.subscribers.set(feed.topic, 500);
      app.subscribers.delete(codecTopic(feed.topic, c));
    }
    await hub.stopAll();
  });
});
