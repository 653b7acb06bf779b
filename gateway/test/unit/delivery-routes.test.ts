// A feed's route table (fanout/routes.ts): the one place receivers join a feed's delivery besides its uWS
// topics, which the hub's `deliver` reads per message and the unit tests' FakeFeed uses as it is. Driven in
// process: the table alone, then through a hub with a fake broker feed and a fake uWS app.
import client from "prom-client";
import type { Broker, BrokerMessage } from "../../src/broker/broker.js";
import { describe, expect, it } from "vitest";
import { FanoutHub } from "../../src/fanout/hub.js";
import { DeliveryRoutes, type LateReceiver, type LiveListener } from "../../src/fanout/routes.js";
import type { TopicPublisher } from "../../src/fanout/socket.js";
import { coalescedTopic, codecTopic, codecTopics, feedTopic, presenceTopic, socketTopic } from "../../src/fanout/topics.js";
import { createLogger } from "../../src/log.js";
import { createMetrics } from "../../src/metrics/metrics.js";
import { CODECS, JSON_CODEC, MSGPACK_CODEC } from "../../src/protocol/codecs.js";

const listener = (seen: number[]): LiveListener => ({ onLive: (seq) => void seen.push(seq) });

describe("delivery routes", () => {
  it("routes — a receiver is on its route from add until its remove function, in the order receivers joined", () => {
    const routes = new DeliveryRoutes();
    const [a, b, c] = [listener([]), listener([]), listener([])];
    const offA = routes.add("live", a);
    routes.add("live", b);
    routes.add("live", c);
    expect([...routes.of("live")]).toEqual([a, b, c]);
    offA();
    expect([...routes.of("live")]).toEqual([b, c]);
    // Routes are separate: a live listener is on no other route.
    expect(routes.of("late").size).toBe(0);
    expect(routes.of("delta").size).toBe(0);
  });

  it("routes — a remove function acts once: the receiver's later registration stays", () => {
    const routes = new DeliveryRoutes();
    const r: LateReceiver = { onLate: () => undefined };
    const first = routes.add("late", r);
    first();
    const second = routes.add("late", r);
    first(); // e.g. a catch-up's abort and then its end: the second call must not undo the new join
    expect([...routes.of("late")]).toEqual([r]);
    second();
    expect(routes.of("late").size).toBe(0);
  });

  it("routes — adding a receiver already on the route changes nothing, and its no-op remover leaves it there", () => {
    const routes = new DeliveryRoutes();
    const l = listener([]);
    const off = routes.add("live", l);
    const again = routes.add("live", l);
    expect(routes.of("live").size).toBe(1);
    again();
    expect(routes.of("live").size).toBe(1);
    off();
    expect(routes.of("live").size).toBe(0);
  });

  it("routes — clear empties every route (the feed stopped)", () => {
    const routes = new DeliveryRoutes();
    routes.add("live", listener([]));
    routes.add("late", { onLate: () => undefined });
    routes.clear();
    expect([routes.of("live").size, routes.of("late").size, routes.of("delta").size]).toEqual([0, 0, 0]);
  });

  it("hub — a listener on the feed's live route gets each message until it leaves; a late one goes to the late route too", async () => {
    const app: TopicPublisher = { publish: () => true, numSubscribers: () => 0 };
    // A broker feed whose position the test sets: a message below it is one the feed repaired late.
    let position = 0;
    let deliver: (m: BrokerMessage) => void = () => undefined;
    const broker = {
      live: async (_p: string, d: (m: BrokerMessage) => void) => {
        deliver = d;
        return { position: () => position, stop: async () => undefined };
      },
    } as unknown as Broker;
    const hub = new FanoutHub({ app, broker, metrics: createMetrics(new client.Registry()), log: createLogger("silent", {}), lingerMs: 1_000 });
    const feed = await hub.acquire("a.*");
    const live: number[] = [];
    const late: number[] = [];
    const leave = feed.routes.add("live", listener(live));
    feed.routes.add("late", { onLate: (seq) => void late.push(seq) });
    const send = (seq: number, at = seq) => {
      position = at;
      deliver({ channel: "a.b", seq, ts: seq, payload: Buffer.from("{}") });
    };
    send(1);
    send(2);
    send(3, 5);
    leave();
    send(6);
    expect(live).toEqual([1, 2, 3]);
    expect(late).toEqual([3]);
    await hub.stopAll();
  });

  it("topics — every topic name comes from one module: a feed's, a channel's presence, each codec's, the coalesced one", () => {
    expect(feedTopic("a.*")).toBe("p:a.*");
    expect(presenceTopic("a.b")).toBe("pr:a.b");
    expect(codecTopic("p:a.*", JSON_CODEC)).toBe("p:a.*");
    expect(codecTopic("p:a.*", MSGPACK_CODEC)).toBe("p:a.*\u0000msgpack");
    expect(coalescedTopic("p:a.*")).toBe("p:a.*\u0000c");
    expect(codecTopics("p:a.*")).toEqual(CODECS.map((c) => codecTopic("p:a.*", c)));
    expect(socketTopic("p:a.*", MSGPACK_CODEC, true)).toBe("p:a.*\u0000msgpack\u0000c");
    expect(socketTopic("p:a.*", JSON_CODEC, false)).toBe("p:a.*");
  });
});
