import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { sectionsOf } from "../../src/config/sections/index.js";
import { ConfigError } from "../../src/errors.js";
import { desiredStream } from "../../src/broker/jetstream/stream.js";
import { desiredMirror, mirrorName, regionMirrors } from "../../src/broker/jetstream/regions.js";
import { resolveNamespaces } from "../../src/namespaces/namespace.js";
import { desiredPresenceBucket } from "../../src/broker/jetstream/presence.js";
import { eventsStream } from "../../src/broker/jetstream/events-stream.js";
import { leaseStream } from "../../src/broker/jetstream/webhook-lease.js";
import { sharedStateBucket } from "../../src/broker/jetstream/shared-state.js";
import { regionStats } from "../../src/http/stats.js";

const NATS = { NATS_URL: "nats://127.0.0.1:4222" };
const sections = (env: NodeJS.ProcessEnv) => sectionsOf(loadConfig([], { ...NATS, ...env }).config);

describe("regions — settings", () => {
  it("regions — without REGION the stream section is today's: base live prefix, no placement, no mirror", () => {
    const c = sections({});
    expect(c.regions).toBeUndefined();
    expect(c.stream.livePrefix).toBe("evlive");
    expect(c.stream.homeLivePrefix).toBe("evlive");
    const d = desiredStream(c.stream);
    expect(d.placement).toBeUndefined();
    expect(d.republish).toEqual({ src: "ev.>", dest: "evlive.>" });
    expect(Object.keys(d)).not.toContain("placement");
    expect(regionMirrors([c.stream], c.regions)).toEqual([]);
  });

  it("regions — HOME_REGION defaults to the first of REGIONS; each region's live prefix is its own", () => {
    const c = sections({ REGION: "b", REGIONS: "a, b, c", REGION_RESUME_WAIT: "500ms" });
    expect(c.regions).toEqual({ region: "b", home: "a", regions: ["a", "b", "c"], resumeWaitMs: 500 });
    expect(c.stream.livePrefix).toBe("evlive.b");
    expect(c.stream.homeLivePrefix).toBe("evlive.a");
    expect(sections({ REGION: "a", REGIONS: "a,b", HOME_REGION: "b" }).regions?.home).toBe("b");
  });

  it.each([
    [{ REGIONS: "a,b" }, "REGIONS"],
    [{ HOME_REGION: "a" }, "HOME_REGION"],
    [{ REGION: "a" }, "REGIONS"],
    [{ REGION: "x", REGIONS: "a,b" }, "REGION"],
    [{ REGION: "a", REGIONS: "a,b", HOME_REGION: "c" }, "HOME_REGION"],
    [{ REGION: "a", REGIONS: "a,b,a" }, "REGIONS"],
    [{ REGION: "a", REGIONS: "a,b.c" }, "REGIONS"],
    [{ REGION: "a.b", REGIONS: "a.b" }, "REGION"],
    [{ REGION: "a", REGIONS: "a,b", BROKER: "redis" }, "REGION"],
    [{ REGION: "a", REGIONS: "a,b", NATS_URL: "" }, "REGION"],
  ])("regions — a combination that cannot work exits naming the setting: %j", (env, setting) => {
    try {
      loadConfig([], { ...NATS, ...env });
      expect.unreachable("should have thrown");
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as ConfigError).setting).toBe(setting);
      expect((e as Error).message).toContain(`invalid ${setting}`);
    }
  });
});

describe("regions — layout", () => {
  it("regions — the origin lives in the home region and republishes under the home region's prefix", () => {
    const c = sections({ REGION: "b", REGIONS: "a,b,c" });
    const d = desiredStream(c.stream);
    expect(d.placement).toEqual({ cluster: "a" });
    expect(d.republish).toEqual({ src: "ev.>", dest: "evlive.a.>" });
  });

  it("regions — a region other than home holds a mirror of every stream, republishing under its own prefix", () => {
    const c = sections({ REGION: "b", REGIONS: "a,b,c", STREAM_MAX_AGE: "1h" });
    const ns = resolveNamespaces([{ name: "chat", prefix: "chat", features: {}, resumeWindowMs: 0 } as never], c.stream)[0]!;
    const mirrors = regionMirrors([c.stream, ns.stream], c.regions);
    expect(mirrors.map((m) => m.wanted.name)).toEqual(["FANOUT_CHANNELS-b", "FANOUT_CHANNELS_CHAT-b"]);
    expect(mirrors.every((m) => m.drift === "region_mirror")).toBe(true);
    const [main, chat] = mirrors.map((m) => m.wanted);
    expect(main).toMatchObject({
      mirror: { name: "FANOUT_CHANNELS" },
      placement: { cluster: "b" },
      allow_direct: true,
      mirror_direct: true,
      republish: { src: "ev.>", dest: "evlive.b.>" },
      max_age: 3_600_000_000_000,
    });
    expect(main?.subjects).toBeUndefined();
    // The namespace's origin republishes under the home prefix, its mirror under the region's: the same rest.
    expect(desiredStream(ns.stream).republish).toEqual({ src: "ev_ns.chat.>", dest: "evlive.a.chat.>" });
    expect(chat?.republish).toEqual({ src: "ev_ns.chat.>", dest: "evlive.b.chat.>" });
  });

  it("regions — the home region holds no mirror; a mirror name taken by a channel stream is refused", () => {
    const home = sections({ REGION: "a", REGIONS: "a,b" });
    expect(regionMirrors([home.stream], home.regions)).toEqual([]);
    const c = sections({ REGION: "b", REGIONS: "a,b" });
    const clash = { ...c.stream, name: mirrorName(c.stream.name, "b") };
    expect(() => regionMirrors([c.stream, clash], c.regions)).toThrow(/a channel stream's name/);
    expect(desiredMirror(c.stream, "b").name).toBe("FANOUT_CHANNELS-b");
  });
});

describe("regions — promotion", () => {
  it("regions — a mirror promoted as scripts/region-promote.sh does (no mirror; subjects and republish from its rule) is the stream the new home's gateway wants, but for its duplicate window", () => {
    const streamsOf = (env: NodeJS.ProcessEnv) => {
      const c = sections({ REGIONS: "a,b,c", STREAM_MAX_AGE: "1h", STREAM_MAX_CONSUMERS: "77", ...env });
      const ns = resolveNamespaces([{ name: "chat", prefix: "chat", features: {}, resumeWindowMs: 0 } as never], c.stream)[0]!;
      return [c.stream, { ...ns.stream, allowMsgTtl: true }];
    };
    const inB = streamsOf({ REGION: "b" });
    const homeB = streamsOf({ REGION: "b", HOME_REGION: "b" });
    for (const [i, s] of inB.entries()) {
      const { mirror: _mirror, mirror_direct: _direct, ...m } = desiredMirror(s, "b");
      const promoted = { ...m, name: s.name, subjects: [m.republish!.src] };
      const { duplicate_window: _window, ...wanted } = desiredStream(homeB[i]!);
      expect(promoted).toEqual(wanted);
    }
  });
});

describe("regions — presence and events", () => {
  it("regions — the presence bucket, the events stream, the webhook's lease and the state bucket are made in the home region; without regions, where NATS puts them", () => {
    for (const [env, home] of [
      [{ REGION: "b", REGIONS: "a,b,c", HOME_REGION: "c" }, { cluster: "c" }],
      [{}, undefined],
    ] as const) {
      const c = sections({ EVENTS: "all", ...env });
      const made = [
        desiredPresenceBucket(c.presence),
        eventsStream(c.events).wanted,
        leaseStream(c.events, 10_000).wanted,
        sharedStateBucket({ bucket: c.events.stateBucket, replicas: 1, storage: "file", homeRegion: c.events.homeRegion }).wanted,
      ];
      for (const m of made) expect(m.placement).toEqual(home);
    }
  });
});

describe("regions — the live page", () => {
  it("regions — /v1/stats' regions: each mirror's lag from the primary's samples; null without mirrors", () => {
    const lag = (stream: string, value: number) => ({ name: "fanout_region_mirror_lag_messages", labels: { stream }, value });
    expect(regionStats([lag("FANOUT_CHANNELS-b", 12), lag("FANOUT_CHANNELS_CHAT-b", 0), { name: "fanout_workers", labels: {}, value: 2 }])).toEqual({
      mirrors: [
        { stream: "FANOUT_CHANNELS-b", lag: 12 },
        { stream: "FANOUT_CHANNELS_CHAT-b", lag: 0 },
      ],
    });
    expect(regionStats([{ name: "fanout_workers", labels: {}, value: 2 }])).toBeNull();
  });
});
