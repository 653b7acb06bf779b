import { describe, expect, it } from "vitest";
import { formerNamesUsed, loadConfig, settingsTable } from "../../src/config/config.js";
import { SECTIONS, sectionsOf } from "../../src/config/sections/index.js";
import { SETTINGS } from "../../src/config/settings.js";
import { unknownSettings } from "../../src/config/unknown-env.js";
import { ConfigError } from "../../src/errors.js";
import { parseBytes, parseDuration } from "../../src/config/parse.js";
import { DEFAULT_DELTA_LIMITS } from "../../src/fanout/deltas.js";

describe("config — parsing", () => {
  it("uses defaults, then env, then flags", () => {
    expect(loadConfig([], {}).config.port).toBe(9000);
    expect(loadConfig([], { PORT: "9100" }).config.port).toBe(9100);
    expect(loadConfig(["--port", "9200"], { PORT: "9100" }).config.port).toBe(9200);
  });

  it("parses durations, sizes, lists, enums and booleans", () => {
    const { config } = loadConfig(
      [
        "--stream-max-age",
        "2h",
        "--max-payload-bytes",
        "128KiB",
        "--nats-url",
        "nats://a:4222, nats://b:4222",
        "--stream-storage",
        "memory",
        "--update-stream",
      ],
      {},
    );
    expect(config.streamMaxAge).toBe(7_200_000);
    expect(config.maxPayloadBytes).toBe(131_072);
    expect(config.natsUrl).toEqual(["nats://a:4222", "nats://b:4222"]);
    expect(config.streamStorage).toBe("memory");
    expect(config.updateStream).toBe(true);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it.each([
    [["--port", "70000"], {}, "PORT"],
    [["--port", "abc"], {}, "PORT"],
    [[], { WORKERS: "0" }, "WORKERS"],
    [[], { STREAM_STORAGE: "disk" }, "STREAM_STORAGE"],
    [[], { STREAM_MAX_AGE: "10" }, "STREAM_MAX_AGE"],
    [[], { STREAM_MAX_AGE: "1m" }, "STREAM_DUPLICATE_WINDOW"],
    [[], { SUBJECT_PREFIX: "fgwpresence" }, "SUBJECT_PREFIX"],
    [[], { SUBJECT_PREFIX: "fgwpresence.PRESENCE.x" }, "SUBJECT_PREFIX"],
    [[], { PRESENCE_BUCKET: "P2", LIVE_SUBJECT_PREFIX: "$KV.P2" }, "LIVE_SUBJECT_PREFIX"],
    [[], { CONTROL_SUBJECT_PREFIX: "fgwpresence" }, "CONTROL_SUBJECT_PREFIX"],
    [[], { LOG_LEVEL: "loud" }, "LOG_LEVEL"],
    [[], { NATS_URL: "http://x" }, "NATS_URL"],
    [["--backpressure-bytes", "8MiB", "--max-backpressure-bytes", "1MiB"], {}, "MAX_BACKPRESSURE_BYTES"],
    [[], { NATS_URL: "nats://a:4222", NATS_USER: "gw" }, "NATS_PASSWORD_FILE"],
    [[], { NATS_URL: "nats://a:4222", NATS_PASSWORD_FILE: "/etc/hostname" }, "NATS_USER"],
    [[], { NATS_URL: "nats://a:4222", NATS_TOKEN_FILE: "/nonexistent/token" }, "NATS_TOKEN_FILE"],
    [[], { NATS_URL: "nats://a:4222", NATS_CREDS_FILE: "/etc/hostname", NATS_TOKEN_FILE: "/etc/hostname" }, "NATS_CREDS_FILE"],
    [[], { NATS_URL: "nats://a:4222", NATS_NKEY_SEED_FILE: "/etc/hostname", NATS_USER: "gw", NATS_PASSWORD_FILE: "/etc/hostname" }, "NATS_NKEY_SEED_FILE"],
    [[], { NATS_URL: "nats://a:4222", NATS_TLS_CERT_FILE: "/etc/hostname" }, "NATS_TLS_KEY_FILE"],
    [[], { NATS_URL: "nats://a:4222", NATS_TLS_CA_FILE: "/nonexistent/ca.pem" }, "NATS_TLS_CA_FILE"],
    [[], { NATS_TOKEN_FILE: "/etc/hostname" }, "NATS_TOKEN_FILE"],
    [["--broker", "redis", "--nats-tls-first"], {}, "NATS_TLS_FIRST"],
  ])("rejects a bad value and names the setting: %j %j", (argv, env, setting) => {
    try {
      loadConfig(argv as string[], env as NodeJS.ProcessEnv);
      expect.unreachable("should have thrown");
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as ConfigError).setting).toBe(setting);
      expect((e as Error).message).toContain(`invalid ${setting}`);
    }
  });

  it("config — a renamed setting is still read by its former name, with a warning; the new name wins", () => {
    expect(loadConfig([], { CONSUMER_LINGER: "5s" }).config.feedLingerMs).toBe(5_000);
    expect(loadConfig(["--consumer-linger", "7s"], {}).config.feedLingerMs).toBe(7_000);
    expect(loadConfig([], { CONSUMER_LINGER: "5s", FEED_LINGER: "1s" }).config.feedLingerMs).toBe(1_000);
    expect(formerNamesUsed([], { CONSUMER_LINGER: "5s" })).toEqual([{ was: "CONSUMER_LINGER", now: "FEED_LINGER" }]);
    expect(formerNamesUsed(["--consumer-linger=7s"], {})).toEqual([{ was: "--consumer-linger", now: "--feed-linger" }]);
    expect(formerNamesUsed([], { FEED_LINGER: "1s" })).toEqual([]);
    // Not taken for a misspelt setting either.
    expect(unknownSettings({ CONSUMER_LINGER: "5s" })).toEqual([]);
  });

  it("rejects unknown flags", () => {
    expect(() => loadConfig(["--no-such-flag", "1"], {})).toThrow(ConfigError);
  });

  it("unit parsers", () => {
    expect(parseDuration("500ms")).toBe(500);
    expect(parseDuration("0")).toBe(0);
    expect(() => parseDuration("5")).toThrow(/unit/);
    expect(parseBytes("1MiB")).toBe(1_048_576);
    expect(parseBytes("-1")).toBe(-1);
    expect(() => parseBytes("1 parsec")).toThrow();
  });

  it("prints the settings tables, one per section, with every setting in its section's", () => {
    const t = settingsTable();
    const tables = t.split(/^### Settings: /m).slice(1);
    expect(tables.map((x) => x.slice(0, x.indexOf("\n")))).toEqual(SECTIONS.map((s) => s.name));
    for (const s of Object.values(SETTINGS)) {
      const table = tables.find((x) => x.startsWith(`${s.section}\n`));
      expect(table, s.env).toContain(`| \`${s.env}\` | \`--${s.flag}\` |`);
    }
  });
});

describe("config — hooks need something that names users", () => {
  const hook = "http://127.0.0.1:1/hook";
  const settingOf = (env: Record<string, string>, args: string[] = []): string | undefined => {
    try {
      loadConfig(args, env);
      return undefined;
    } catch (e) {
      return e instanceof ConfigError ? e.setting : String(e);
    }
  };

  it("refuses a subscribe hook with authentication off and no connect hook, and a connect hook that sees no headers", () => {
    expect(settingOf({ SUBSCRIBE_HOOK_URL: hook })).toBe("SUBSCRIBE_HOOK_URL");
    expect(settingOf({ CONNECT_HOOK_URL: hook }, ["--hook-headers", ""])).toBe("HOOK_HEADERS");
  });

  it("accepts hooks behind a token, or a connect hook that reads the session headers", () => {
    expect(settingOf({ SUBSCRIBE_HOOK_URL: hook, JWT_SECRET: "x".repeat(40) })).toBeUndefined();
    expect(settingOf({ CONNECT_HOOK_URL: hook, SUBSCRIBE_HOOK_URL: hook })).toBeUndefined();
    expect(settingOf({ CONNECT_HOOK_URL: hook, HOOK_HEADERS: "cookie" })).toBeUndefined();
  });
});

describe("config — sections", () => {
  it("config — every setting is declared by exactly one section, and the sections' slices are what components get", () => {
    const declared = SECTIONS.flatMap((s) => Object.keys(s.settings));
    expect(new Set(declared).size).toBe(declared.length);
    expect(declared.sort()).toEqual(Object.keys(SETTINGS).sort());
    const envs = Object.values(SETTINGS).flatMap((s) => (s.formerly ? [s.env, s.formerly.env] : [s.env]));
    expect(new Set(envs).size).toBe(envs.length);
    const c = sectionsOf(loadConfig([], {}).config);
    expect(Object.keys(c)).toEqual(SECTIONS.map((s) => s.name));
    expect(Object.isFrozen(c) && Object.values(c).every((slice) => Object.isFrozen(slice))).toBe(true);
  });

  it("config — flags are the kebab case of the env names, former names included, and the CLI takes each one", () => {
    // Spelt out: these are the names users have in their scripts and manifests; a derivation change must not move them.
    const flags = Object.fromEntries(Object.values(SETTINGS).map((s) => [s.env, s.flag]));
    expect(flags).toMatchObject({
      PORT: "port",
      JWT_CLOCK_TOLERANCE: "jwt-clock-tolerance",
      STREAM_MAX_MSGS_PER_SUBJECT: "stream-max-msgs-per-subject",
      DURABLE_INACTIVE_THRESHOLD: "durable-inactive-threshold",
      NATS_TLS_FIRST: "nats-tls-first",
      FEED_LINGER: "feed-linger",
    });
    expect(SETTINGS.feedLingerMs.formerly).toEqual({ env: "CONSUMER_LINGER", flag: "consumer-linger" });
    for (const s of Object.values(SETTINGS)) {
      expect(s.flag).toBe(s.env.toLowerCase().replaceAll("_", "-"));
      // Each flag is known to the parser: an empty value is refused by the setting's own check, or read, never "unknown option".
      try {
        loadConfig(s.boolean ? [`--${s.flag}`] : [`--${s.flag}=`], {});
      } catch (e) {
        expect((e as Error).message, s.flag).not.toMatch(/Unknown option/);
      }
    }
  });

  it("config — a derived slice field follows its settings", () => {
    const c = sectionsOf(loadConfig(["--stream-repair", "report", "--subject-prefix", "x"], { STREAM_REPLICAS: "3", STREAM_STORAGE: "memory" }).config);
    expect(c.stream).toMatchObject({ subjectPrefix: "x", livePrefix: "xlive", repair: false, replicas: 3, allowMsgTtl: false });
    expect(c.presence).toMatchObject({ replicas: 3, storage: "memory" });
    expect(c.broker.natsSecurity).toEqual(c.natsSecurity);
    expect(c.log.level).toBe("info");
  });
});

describe("config — delta limits", () => {
  it("config — the deltas section's defaults are the bounds deltas had before they were settings", () => {
    const { jsonTargetsOnly: _rule, ...bounds } = DEFAULT_DELTA_LIMITS;
    expect(sectionsOf(loadConfig([], {}).config).deltas).toEqual(bounds);
  });

  it("config — delta limits are read from env and flags, with units", () => {
    const c = sectionsOf(
      loadConfig(["--delta-max-payload-bytes", "1KiB", "--delta-idle", "30s"], {
        DELTA_MAX_CHANNELS: "500",
        DELTA_MAX_BYTES: "8MiB",
        DELTA_MAX_CHANNELS_PER_SUBSCRIPTION: "10",
        DELTA_IDLE: "1h",
        DELTA_WORK_PER_BYTE: "20",
      }).config,
    );
    expect(c.deltas).toEqual({
      maxChannels: 500,
      maxBytes: 8_388_608,
      idleMs: 30_000,
      maxPayloadBytes: 1_024,
      maxChannelsPerSubscription: 10,
      workPerByte: 20,
    });
    expect(sectionsOf(loadConfig([], { DELTA_MAX_PAYLOAD_BYTES: "0" }).config).deltas.maxPayloadBytes).toBe(0);
  });

  it.each([
    ["DELTA_MAX_CHANNELS", "0", "must be between 1 and 10000000"],
    ["DELTA_MAX_CHANNELS", "many", '"many" is not an integer'],
    ["DELTA_MAX_BYTES", "1KiB", "must be between 65536 and 17179869184"],
    ["DELTA_MAX_BYTES", "-1", "must be between 65536"],
    ["DELTA_IDLE", "10", "needs a unit"],
    ["DELTA_IDLE", "500ms", "must be between 1000 and 86400000"],
    ["DELTA_MAX_PAYLOAD_BYTES", "1GiB", "must be between 0 and 67108864"],
    ["DELTA_MAX_PAYLOAD_BYTES", "big", "is not a size"],
    ["DELTA_MAX_CHANNELS_PER_SUBSCRIPTION", "1001", "must be between 1 and 1000"],
  ])("config — a bad delta limit is refused with a message naming it: %s=%s", (env, value, why) => {
    const flag = env.toLowerCase().replaceAll("_", "-");
    const ways: [string[], Record<string, string>][] = [
      [[], { [env]: value }],
      [[`--${flag}=${value}`], {}],
    ];
    for (const [argv, vars] of ways) {
      try {
        loadConfig(argv, vars);
        expect.unreachable("should have thrown");
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        expect((e as ConfigError).setting).toBe(env);
        expect((e as Error).message).toMatch(new RegExp(`^invalid ${env} \\(--${flag}\\): .*${why.replace(/[.*"]/g, "\\$&")}`));
      }
    }
  });
});
