import { describe, expect, it } from "vitest";
import client from "prom-client";
import { parseNamespaces } from "../../src/namespaces/file.js";
import { namespacesSection } from "../../src/namespaces/namespace.js";
import { loadConfig } from "../../src/config/config.js";
import { sectionsOf } from "../../src/config/sections/index.js";
import { EventRecorder, type EventFields } from "../../src/events/recorder.js";
import { createLogger } from "../../src/log.js";
import { ShareTally } from "../../src/events/tally.js";
import { channelKey, memberKey } from "../../src/events/shared-keys.js";

const yaml = (body: string) => parseNamespaces(`namespaces:\n  ${body}\n`, "yaml");

describe("events — per namespace", () => {
  it("events — a namespace's events: a list of channel kinds, false for none, true or absent for all", () => {
    expect(yaml("chat: { events: [presence.join, subscribe] }")[0]?.events).toEqual(["subscribe", "presence.join"]);
    expect(yaml("chat: { events: false }")[0]?.events).toEqual([]);
    expect(yaml("chat: { events: [] }")[0]?.events).toEqual([]);
    expect(yaml("chat: { events: true }")[0]?.events).toBeUndefined();
    expect(yaml("chat: {}")[0]?.events).toBeUndefined();
  });

  it("events — connect, disconnect, unknown kinds and other shapes are refused, naming the namespace", () => {
    expect(() => yaml("chat: { events: [connect] }")).toThrow(/namespace "chat": events: connect is not about a channel \(EVENTS sets it for all\)/);
    expect(() => yaml("chat: { events: [join] }")).toThrow(/namespace "chat": events: join is not a kind of channel event; kinds: subscribe, unsubscribe/);
    expect(() => yaml("chat: { events: subscribe }")).toThrow(/namespace "chat": events must be a list of event kinds/);
    expect(() => yaml("chat: { event: false }")).toThrow(/unknown field "event" \(did you mean events\?\)/);
  });

  it("events — the recorder drops the kinds a channel's namespace turns off; channel-less kinds and other channels are untouched", async () => {
    const c = sectionsOf(loadConfig([], { EVENTS: "all" }).config);
    const namespaces = namespacesSection(yaml("quiet: { events: false }\n  pres: { events: [presence.join, presence.leave] }"), c.stream);
    const stored: string[] = [];
    const recorder = new EventRecorder(
      c.events,
      async (subject, json) => {
        stored.push(`${subject} ${(JSON.parse(json) as { channel?: string }).channel ?? ""}`.trim());
        return stored.length;
      },
      createLogger("silent", {}),
      new client.Registry(),
      namespaces,
    );
    const who: EventFields = { user: "u", client: "c1", transport: "websocket" };
    recorder.record("connect", who);
    for (const channel of ["quiet.a", "quiet.>", "pres.room", "other.x"]) {
      recorder.record("subscribe", { ...who, channel });
      recorder.record("presence.join", { ...who, channel });
    }
    recorder.record("disconnect", { ...who, code: 1000, reason: "" });
    await Promise.resolve();
    expect(stored).toEqual([
      "fanout.events.connect",
      "fanout.events.presence.join pres.room",
      "fanout.events.subscribe other.x",
      "fanout.events.presence.join other.x",
      "fanout.events.disconnect",
    ]);
  });

  it("events — the cluster-wide kinds: a worker counts only channels (and identified users) whose namespace records them", () => {
    const c = sectionsOf(loadConfig([], { EVENTS: "all" }).config);
    const namespaces = namespacesSection(yaml("quiet: { events: [subscribe] }\n  rooms: { events: [channel.vacated, presence.leave] }"), c.stream);
    const counted: string[] = [];
    const tally = new ShareTally((key, held) => counted.push(`${held ? "+" : "-"}${key}`));
    const recorder = new EventRecorder(c.events, async () => 1, createLogger("silent", {}), new client.Registry(), namespaces, tally);
    const who: EventFields = { user: "u", client: "c1", transport: "websocket" };
    for (const channel of ["quiet.a", "rooms.1", "other.x"]) {
      recorder.record("subscribe", { ...who, channel });
      recorder.presence(true, { ...who, channel }, true);
      recorder.presence(false, { ...who, channel }, true);
      recorder.record("unsubscribe", { ...who, channel });
    }
    expect(counted).toEqual([
      `+${channelKey("rooms.1")}`,
      `+${memberKey("u", "rooms.1")}`,
      `-${memberKey("u", "rooms.1")}`,
      `-${channelKey("rooms.1")}`,
      `+${channelKey("other.x")}`,
      `+${memberKey("u", "other.x")}`,
      `-${memberKey("u", "other.x")}`,
      `-${channelKey("other.x")}`,
    ]);
  });
});
