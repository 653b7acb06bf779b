// The subscription lifecycle owner with a fake socket and a fake hub: transitions and the two bugs of the
// old code (a double release; a paused from:{time} resuming from seq 1).
import client from "prom-client";
import { describe, expect, it } from "vitest";
import { Subscriptions } from "../../src/ws/subscriptions.js";
import { newSession, type Socket } from "../../src/ws/session.js";
import { anonymousIdentity } from "../../src/auth/access.js";
import { createMetrics } from "../../src/metrics/metrics.js";
import { createLogger } from "../../src/log.js";
import type { FanoutHub } from "../../src/fanout/hub.js";
import type { Feed } from "../../src/fanout/feed.js";
import { Resume } from "../../src/fanout/resume.js";
import { FakeFeed } from "#testkit/fake-feed.js";

const metrics = createMetrics(new client.Registry());
const log = createLogger("silent", {});

function fakeSocket(): Socket & { topics: Set<string> } {
  const s = newSession(anonymousIdentity("127.0.0.1"));
  const topics = new Set<string>();
  return {
    topics,
    getUserData: () => s,
    subscribe: (t: string) => topics.add(t),
    unsubscribe: (t: string) => topics.delete(t),
    send: () => 1,
    cork: (f: () => void) => f(),
    getBufferedAmount: () => 0,
  } as unknown as Socket & { topics: Set<string> };
}

function fakeHub(): FanoutHub & { released: string[] } {
  const released: string[] = [];
  return { released, release: (p: string) => released.push(p), get: () => undefined, pages: undefined } as unknown as FanoutHub & { released: string[] };
}

const feed = (pattern: string): Feed => new FakeFeed(pattern, 120, 7);
const opts = { holdLimit: 100, backpressureBytes: 1 << 20 };
const bp = { bytes: 1 << 20, maxBytes: 1 << 24, slowTimeoutMs: 60_000 };
const subsOf = (hub: FanoutHub) =>
  new Subscriptions({
    lifecycle: { resume: new Resume(hub, opts, log), connected: () => true, log },
    hub,
    backpressure: bp,
    metrics,
    log,
    onSlow: () => undefined,
  });

describe("subscriptions — lifecycle", () => {
  it("subscriptions — ending twice (an unsub, then the failed start position) releases the feed and the gauge once", async () => {
    const hub = fakeHub();
    const subs = subsOf(hub);
    const ws = fakeSocket();
    const gauge = async () => (await metrics.subscriptions.get()).values[0]?.value ?? 0;
    const before = await gauge();
    const sub = subs.begin(ws, "a.b");
    expect(subs.attach(ws, sub)).toBe(true);
    subs.end(ws, sub); // the client's unsub
    subs.end(ws, sub); // resolveStart failed afterwards
    expect(hub.released).toEqual(["a.b"]);
    expect(sub.life.phase).toBe("ended");
    expect(ws.getUserData().subs.size).toBe(0);
    expect(await gauge()).toBe(before);
  });

  it("subscriptions — a feed acquired for a subscription that ended meanwhile is released at once", () => {
    const hub = fakeHub();
    const subs = subsOf(hub);
    const ws = fakeSocket();
    const sub = subs.begin(ws, "x");
    subs.end(ws, sub);
    expect(subs.attach(ws, sub)).toBe(false);
    expect(hub.released).toEqual(["x"]);
  });

  it("subscriptions — a start position resolved while the socket is paused is kept: it resumes after it, not from seq 1", () => {
    const hub = fakeHub();
    (hub as { pages?: unknown }).pages = {};
    const subs = subsOf(hub);
    const ws = fakeSocket();
    subs.pause(ws);
    const sub = subs.begin(ws, "t");
    subs.attach(ws, sub);
    // from:{time} resolved to seq 42 by the handler: delivery starts after 41.
    sub.life.start(feed("t"), 41);
    expect(sub.life.phase).toBe("paused");
    expect(sub.life.resumeAfter).toBe(41);
  });

  it("subscriptions — live: joins the topic; pause leaves it and remembers the feed's position", () => {
    const hub = fakeHub();
    const f = feed("l");
    (hub as { get: (p: string) => Feed | undefined }).get = () => f;
    const subs = subsOf(hub);
    const ws = fakeSocket();
    const sub = subs.begin(ws, "l");
    subs.attach(ws, sub);
    expect(sub.life.start(f)).toBe(120);
    expect(sub.life.phase).toBe("live");
    expect(ws.topics.has("p:l")).toBe(true);
    subs.pause(ws);
    expect(sub.life.phase).toBe("paused");
    expect(ws.topics.has("p:l")).toBe(false);
    expect(sub.life.resumeAfter).toBe(120);
  });
});
