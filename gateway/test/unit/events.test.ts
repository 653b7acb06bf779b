import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { sectionsOf } from "../../src/config/sections/index.js";
import { backoffMs, batchBody, webhookSecrets } from "../../src/events/webhook.js";

const eventsOf = (env: Record<string, string>) => sectionsOf(loadConfig([], env).config).events;

describe("events — settings, batches and backoff", () => {
  it("events — nothing is recorded by default; EVENTS_WEBHOOK_URL alone records every kind; EVENTS narrows it", () => {
    expect(eventsOf({}).kinds).toEqual([]);
    expect(eventsOf({ EVENTS_WEBHOOK_URL: "http://127.0.0.1:1/e" }).kinds).toEqual([
      "connect",
      "disconnect",
      "subscribe",
      "unsubscribe",
      "presence.join",
      "presence.leave",
      "channel.occupied",
      "channel.vacated",
    ]);
    expect(eventsOf({ EVENTS_WEBHOOK_URL: "http://127.0.0.1:1/e", EVENTS: "disconnect" }).kinds).toEqual(["disconnect"]);
    expect(eventsOf({ EVENTS: "Presence.Leave, connect" }).kinds).toEqual(["connect", "presence.leave"]);
    expect(eventsOf({ EVENTS: "all" }).kinds).toHaveLength(8);
  });

  it("events — the debounce and the instance TTL: 3 s and 15 s by default, durations, the TTL at least 1 s", () => {
    expect(eventsOf({})).toMatchObject({ debounceMs: 3_000, instanceTtlMs: 15_000, stateBucket: "FANOUT_EVENTS_STATE" });
    expect(eventsOf({ EVENTS_DEBOUNCE: "0", EVENTS_INSTANCE_TTL: "2s", EVENTS_STREAM: "EV" })).toMatchObject({
      debounceMs: 0,
      instanceTtlMs: 2_000,
      stateBucket: "EV_STATE",
    });
    expect(() => eventsOf({ EVENTS_INSTANCE_TTL: "500ms" })).toThrow(/EVENTS_INSTANCE_TTL/);
  });

  it("events — the events stream, its lease and the state bucket have STREAM_REPLICAS replicas (1 by default)", () => {
    expect(eventsOf({}).replicas).toBe(1);
    expect(eventsOf({ STREAM_REPLICAS: "3" }).replicas).toBe(3);
  });

  it("events — an unknown kind, the Redis broker or a subject over the channels' are refused at start", () => {
    expect(() => eventsOf({ EVENTS: "connect,join" })).toThrow(/join is not a kind of event/);
    expect(() => eventsOf({ EVENTS: "presence" })).toThrow(/presence is not a kind of event/);
    expect(() => eventsOf({ EVENTS: "all", BROKER: "redis" })).toThrow(/BROKER=redis/);
    expect(() => eventsOf({ EVENTS: "all", EVENTS_SUBJECT: "ev.events" })).toThrow(/EVENTS_SUBJECT.*overlaps the stream's subjects/);
  });

  it("events — ordered by default (one batch in flight, take-over in 5 s); EVENTS_WEBHOOK_CONCURRENCY lets more out; a take-over shorter than two waits is refused", () => {
    const url = { EVENTS_WEBHOOK_URL: "http://127.0.0.1:1/e" };
    expect(eventsOf(url).webhook).toMatchObject({ concurrency: 1, takeoverMs: 5_000, waitMs: 1_000 });
    expect(eventsOf({ ...url, EVENTS_WEBHOOK_CONCURRENCY: "8", EVENTS_WEBHOOK_TAKEOVER: "20s" }).webhook).toMatchObject({ concurrency: 8, takeoverMs: 20_000 });
    expect(() => eventsOf({ ...url, EVENTS_WEBHOOK_CONCURRENCY: "0" })).toThrow(/EVENTS_WEBHOOK_CONCURRENCY/);
    expect(() => eventsOf({ ...url, EVENTS_WEBHOOK_WAIT: "3s", EVENTS_WEBHOOK_TAKEOVER: "5s" })).toThrow(
      /EVENTS_WEBHOOK_TAKEOVER.*at least twice EVENTS_WEBHOOK_WAIT/,
    );
  });

  it("events — a batch is {events:[…]} with each event's stream sequence as its id, first", () => {
    const body = batchBody([
      { seq: 7, json: '{"type":"connect","user":"u"}' },
      { seq: 9, json: '{"type":"disconnect","user":"u","code":1000}' },
    ]);
    expect(JSON.parse(body)).toEqual({
      events: [
        { id: 7, type: "connect", user: "u" },
        { id: 9, type: "disconnect", user: "u", code: 1000 },
      ],
    });
    expect(body.startsWith('{"events":[{"id":7,"type"')).toBe(true);
  });

  it("events — backoff doubles from 100 ms, is capped, and is jittered between half and all of it", () => {
    expect([0, 1, 2, 3].map((a) => backoffMs(a, 30_000, () => 1))).toEqual([100, 200, 400, 800]);
    expect(backoffMs(20, 30_000, () => 1)).toBe(30_000);
    expect(backoffMs(1_000, 30_000, () => 0)).toBe(15_000);
    expect(backoffMs(3, 30_000, () => 0.5)).toBe(600);
  });

  it("events — the secret file: one secret, or the new one then the previous one; empty or three refused", () => {
    expect(webhookSecrets("s1\n", "f")).toEqual(["s1"]);
    expect(webhookSecrets("s1\r\n\ns0\n", "f")).toEqual(["s1", "s0"]);
    expect(() => webhookSecrets("\n\n", "f")).toThrow(/f is empty/);
    expect(() => webhookSecrets("a\nb\nc\n", "f")).toThrow(/holds 3 secrets: at most two/);
  });
});
