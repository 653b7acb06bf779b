import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import client from "prom-client";
import { pino } from "pino";
import { Announcer } from "../../src/events/announcer.js";
import { EventRecorder } from "../../src/events/recorder.js";
import { InstanceShares } from "../../src/events/shares.js";
import { channelKey } from "../../src/events/shared-keys.js";
import { EVENT_KINDS } from "../../src/config/sections/events.js";
import { Services } from "../../src/services/services.js";
import { LeaderLease } from "../../src/services/leader-lease.js";
import type { LeaseStore } from "../../src/broker/broker.js";
import { createLogger } from "../../src/log.js";
import { MemorySharedState } from "#testkit/memory-shared-state.js";

const DEBOUNCE = 3_000;
const TTL = 15_000;
const log = createLogger("silent", {});

/** The events stream as the announcer sees it: a repeat of a Nats-Msg-Id is dropped, as JetStream does. */
class Stream {
  readonly events: { type: string; channel?: string; user?: string }[] = [];
  private readonly ids = new Set<string>();
  readonly append = async (_subject: string, json: string, msgId?: string): Promise<number> => {
    if (msgId !== undefined && this.ids.has(msgId)) return 0;
    if (msgId !== undefined) this.ids.add(msgId);
    this.events.push(JSON.parse(json) as { type: string; channel?: string });
    return this.events.length;
  };
  types = (channel: string): string[] => this.events.filter((e) => e.channel === channel).map((e) => e.type);
}

let state: MemorySharedState;
let stream: Stream;

const announcer = (): Announcer =>
  new Announcer(state, new EventRecorder({ kinds: EVENT_KINDS, subject: "fanout.events" }, stream.append, log, new client.Registry()), DEBOUNCE, log);

/** Lets the announcer's chain of writes run (microtasks; the fake timers hold every timer). */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

beforeEach(() => {
  vi.useFakeTimers();
  state = new MemorySharedState(TTL);
  stream = new Stream();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("events — the announcer against a memory shared state", () => {
  it("events — a leader that takes over starts from what the last one announced: no repeat, and the vacated is its own", async () => {
    await state.heartbeat("a");
    const first = announcer();
    await first.start();
    await state.share(channelKey("k"), "a", true);
    await settle();
    expect(stream.types("k")).toEqual(["channel.occupied"]);
    await first.stop();
    const second = announcer();
    await second.start();
    await settle();
    expect(stream.types("k")).toEqual(["channel.occupied"]);
    await state.share(channelKey("k"), "a", false);
    await vi.advanceTimersByTimeAsync(DEBOUNCE);
    await settle();
    expect(stream.types("k")).toEqual(["channel.occupied", "channel.vacated"]);
    await second.stop();
  });

  it("events — a leader gone between storing an event and announcing it: the next one stores it again under the same id, and the stream drops the repeat", async () => {
    await state.heartbeat("a");
    const first = announcer();
    await first.start();
    state.failAnnounce = true;
    await state.share(channelKey("k"), "a", true);
    await settle();
    expect(stream.types("k")).toEqual(["channel.occupied"]);
    // It stops while waiting to try again (a second later).
    const stopping = first.stop();
    await vi.advanceTimersByTimeAsync(1_000);
    await stopping;
    const second = announcer();
    await second.start();
    await settle();
    expect(stream.types("k")).toEqual(["channel.occupied"]);
    expect(stream.events.filter((e) => e.type === "channel.occupied")).toHaveLength(1);
    // The next round of the key is recorded: a new id, since the announcement is there now.
    await state.share(channelKey("k"), "a", false);
    await vi.advanceTimersByTimeAsync(DEBOUNCE);
    await state.share(channelKey("k"), "a", true);
    await settle();
    expect(stream.types("k")).toEqual(["channel.occupied", "channel.vacated", "channel.occupied"]);
    await second.stop();
  });
});

describe("services — the heartbeat, the lease and the instance's shares", () => {
  it("services — one of two instances leads; when it dies the other takes the lease after the TTL, and the dead one's channels go vacated once", async () => {
    const sharesA = new InstanceShares(state, "a", log);
    const announcerA = announcer();
    let aDead = false;
    const store = state.leaderLease();
    // A's writes hang once it is dead (as its process would never answer again).
    const storeA: LeaseStore = {
      read: () => (aDead ? new Promise(() => undefined) : store.read()),
      write: (h, n) => (aDead ? new Promise(() => undefined) : store.write(h, n)),
    };
    const leaseOf = (s: LeaseStore, holder: string) => new LeaderLease(s, holder, TTL * 0.75, () => state.now);
    const a = new Services(state, leaseOf(storeA, "a"), "a", TTL, [sharesA], [announcerA], log);
    const b = new Services(state, leaseOf(store, "b"), "b", TTL, [new InstanceShares(state, "b", log)], [announcer()], log);
    await a.start();
    await b.start();
    expect([a.leader, b.leader]).toEqual([true, false]);
    sharesA.report(1, channelKey("k"), true);
    sharesA.report(2, channelKey("k"), true);
    await settle();
    expect(stream.types("k")).toEqual(["channel.occupied"]);
    // One worker lets go: the instance still holds the key.
    sharesA.report(1, channelKey("k"), false);
    await vi.advanceTimersByTimeAsync(DEBOUNCE * 2);
    expect(stream.types("k")).toEqual(["channel.occupied"]);
    // A dies (its announcer stops, its refreshes hang, nothing is removed): its heartbeat and lease expire, B leads and lets k go.
    await announcerA.stop();
    aDead = true;
    vi.spyOn(state, "heartbeat").mockImplementation(async (instance) => (instance === "a" ? new Promise(() => undefined) : "kept"));
    for (let t = 0; t < TTL * 2; t += 1_000) {
      state.advance(1_000);
      await vi.advanceTimersByTimeAsync(1_000);
    }
    expect(b.leader).toBe(true);
    await vi.advanceTimersByTimeAsync(DEBOUNCE);
    await settle();
    expect(stream.types("k")).toEqual(["channel.occupied", "channel.vacated"]);
    await b.stop();
  });

  it("services — a heartbeat that lapsed (the loop stalled past the TTL) is counted and warned, the shares are written again, and a channel held throughout records nothing more", async () => {
    const registry = new client.Registry();
    const warnings: string[] = [];
    const logged = pino({ level: "warn" }, { write: (line: string) => void warnings.push(line) });
    const shares = new InstanceShares(state, "a", log);
    const a = new Services(state, new LeaderLease(state.leaderLease(), "a", TTL * 0.75, () => state.now), "a", TTL, [shares], [announcer()], logged, registry);
    await a.start();
    shares.report(1, channelKey("k"), true);
    await settle();
    expect(stream.types("k")).toEqual(["channel.occupied"]);
    // Just before a round, the heartbeat is gone (as when no round ran for longer than the TTL): the leader counts
    // the instance gone and drops its shares.
    await vi.advanceTimersByTimeAsync(TTL / 3 - 10);
    await state.resign("a");
    await settle();
    expect(state.has(`s.${channelKey("k")}.a`)).toBe(false);
    // The next round finds it expired: counted, warned, and the instance's share of k written again.
    await vi.advanceTimersByTimeAsync(10);
    expect(state.has(`s.${channelKey("k")}.a`)).toBe(true);
    expect((await registry.getSingleMetric("fanout_cluster_heartbeat_lapses_total")!.get()).values[0]!.value).toBe(1);
    expect(warnings.some((w) => w.includes("heartbeat had expired"))).toBe(true);
    // Back within the debounce: neither a vacated nor a second occupied.
    await vi.advanceTimersByTimeAsync(DEBOUNCE * 2);
    expect(stream.types("k")).toEqual(["channel.occupied"]);
    await a.stop();
  });

  it("services — a heartbeat that cannot be written at the start (no responders yet) does not stop the start: the next round writes it, no lapse counted, and the shares are there", async () => {
    const registry = new client.Registry();
    const shares = new InstanceShares(state, "a", log);
    const a = new Services(state, new LeaderLease(state.leaderLease(), "a", TTL * 0.75, () => state.now), "a", TTL, [shares], [announcer()], log, registry);
    const heartbeat = state.heartbeat.bind(state);
    let refusals = 2;
    vi.spyOn(state, "heartbeat").mockImplementation(async (instance) => {
      if (refusals-- > 0) throw new Error("no responders");
      return heartbeat(instance);
    });
    await a.start();
    expect(state.has("i.a")).toBe(false);
    shares.report(1, channelKey("k"), true);
    await vi.advanceTimersByTimeAsync(TTL / 3);
    await settle();
    expect(state.has("i.a")).toBe(true);
    expect(state.has(`s.${channelKey("k")}.a`)).toBe(true);
    expect(stream.types("k")).toEqual(["channel.occupied"]);
    expect((await registry.getSingleMetric("fanout_cluster_heartbeat_lapses_total")!.get()).values[0]?.value ?? 0).toBe(0);
    await a.stop();
  });
});
