// The channel stream's default name is FANOUT_CHANNELS (it was EVENTS, easily taken for the events feature's
// FANOUT_EVENTS); a store made by a gateway of before, with EVENTS on the gateway's subjects, keeps EVENTS when
// STREAM_NAME is not set. The decision is pure (chooseStreamName); its look-ups are tried on a fake manager.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { JetStreamApiError, type JetStreamManager } from "@nats-io/jetstream";
import { PermissionViolationError, RequestError } from "@nats-io/transport-node";
import { chooseStreamName, streamNameInUse, type StreamNameFacts } from "../../src/broker/jetstream/stream-name.js";
import { loadConfig, settingGiven } from "../../src/config/config.js";
import { sectionsOf } from "../../src/config/sections/index.js";
import { createLogger } from "../../src/log.js";

const log = createLogger("silent", {});
type Case = Partial<Omit<StreamNameFacts, "existing">> & { existing?: Readonly<Record<string, readonly string[]>> };
const facts = (o: Case): StreamNameFacts => ({
  given: false,
  name: "FANOUT_CHANNELS",
  subjectPrefix: "ev",
  ...o,
  existing: new Map(Object.entries(o.existing ?? {})),
});

describe("stream name — the default and a store of before", () => {
  it("stream name — the default is FANOUT_CHANNELS; namespace streams follow the settled name (<STREAM_NAME>_<NAME>)", () => {
    const file = join(mkdtempSync(join(tmpdir(), "fgw-sn-")), "ns.yaml");
    writeFileSync(file, "namespaces:\n  chat: {}\n  own: { stream: OWN }\n");
    const parsed = loadConfig([], { NAMESPACES_FILE: file }).config;
    const names = (c: typeof parsed) => {
      const s = sectionsOf(c);
      return [s.stream.name, ...s.namespaces.list.map((ns) => ns.stream.name)];
    };
    expect(names(parsed)).toEqual(["FANOUT_CHANNELS", "FANOUT_CHANNELS_CHAT", "OWN"]);
    // What the primary hands its workers when a store of before keeps EVENTS.
    expect(names({ ...parsed, streamName: "EVENTS" })).toEqual(["EVENTS", "EVENTS_CHAT", "OWN"]);
  });

  it.each([
    ["a fresh store gets the default", {}, { name: "FANOUT_CHANNELS", former: false }],
    ["a store of before keeps EVENTS", { existing: { EVENTS: ["ev.>"] } }, { name: "EVENTS", former: true }],
    [
      "the default, once it exists, wins over EVENTS",
      { existing: { EVENTS: ["ev.>"], FANOUT_CHANNELS: ["ev.>"] } },
      { name: "FANOUT_CHANNELS", former: false },
    ],
    ["an EVENTS on other subjects is not the gateway's", { existing: { EVENTS: ["orders.>"] } }, { name: "FANOUT_CHANNELS", former: false }],
    [
      "EVENTS of another SUBJECT_PREFIX is not this gateway's",
      { subjectPrefix: "chan", existing: { EVENTS: ["ev.>"] } },
      { name: "FANOUT_CHANNELS", former: false },
    ],
    [
      "EVENTS with extra subjects is still the gateway's (its start then reports the difference)",
      { existing: { EVENTS: ["ev.>", "x.>"] } },
      { name: "EVENTS", former: true },
    ],
    ["STREAM_NAME given is used as given", { given: true, existing: { EVENTS: ["ev.>"] } }, { name: "FANOUT_CHANNELS", former: false }],
    ["STREAM_NAME=EVENTS given is not 'former'", { given: true, name: "EVENTS", existing: { EVENTS: ["ev.>"] } }, { name: "EVENTS", former: false }],
    ["STREAM_NAME given and absent is made", { given: true, name: "MINE" }, { name: "MINE", former: false }],
  ] as [string, Case, { name: string; former: boolean }][])("stream name — %s", (_, f, want) => {
    expect(chooseStreamName(facts(f))).toEqual(want);
  });

  it("stream name — given means set by env or flag (a former name too); an empty env value is not given", () => {
    expect(settingGiven("streamName", [], {})).toBe(false);
    expect(settingGiven("streamName", [], { STREAM_NAME: "" })).toBe(false);
    expect(settingGiven("streamName", [], { STREAM_NAME: "EVENTS" })).toBe(true);
    expect(settingGiven("streamName", ["--stream-name", "EVENTS"], {})).toBe(true);
    expect(settingGiven("streamName", ["--stream-name=EVENTS"], {})).toBe(true);
    expect(settingGiven("streamName", ["--stream-names"], {})).toBe(false);
    expect(settingGiven("feedLingerMs", [], { CONSUMER_LINGER: "5s" })).toBe(true);
  });
});

describe("stream name — the primary's look-ups", () => {
  const notFound = () => new JetStreamApiError({ code: 404, err_code: 10059, description: "stream not found" });
  const denied = (name: string) =>
    new RequestError(`Permissions Violation for Publish to "$JS.API.STREAM.INFO.${name}"`, {
      cause: new PermissionViolationError(`Permissions Violation for Publish to "$JS.API.STREAM.INFO.${name}"`, "publish", `$JS.API.STREAM.INFO.${name}`),
    });
  const manager = (streams: Record<string, string[] | Error>): { jsm: JetStreamManager; asked: string[] } => {
    const asked: string[] = [];
    const info = async (name: string) => {
      asked.push(name);
      const s = streams[name];
      if (s === undefined) throw notFound();
      if (s instanceof Error) throw s;
      return { config: { name, subjects: s } };
    };
    return { jsm: { streams: { info } } as unknown as JetStreamManager, asked };
  };
  const base = { given: false, name: "FANOUT_CHANNELS", subjectPrefix: "ev" };

  it("stream name — STREAM_NAME given asks nothing (a user granted only its stream's subjects starts as before)", async () => {
    const m = manager({});
    await expect(streamNameInUse(m.jsm, { ...base, given: true, name: "SECURE" }, log)).resolves.toBe("SECURE");
    expect(m.asked).toEqual([]);
  });

  it("stream name — EVENTS found and FANOUT_CHANNELS not: EVENTS", async () => {
    await expect(streamNameInUse(manager({ EVENTS: ["ev.>"] }).jsm, base, log)).resolves.toBe("EVENTS");
    await expect(streamNameInUse(manager({}).jsm, base, log)).resolves.toBe("FANOUT_CHANNELS");
  });

  it("stream name — a user granted only EVENTS' subjects (AUTH.md's list of before) keeps EVENTS: a refused look-up counts as absent", async () => {
    await expect(streamNameInUse(manager({ FANOUT_CHANNELS: denied("FANOUT_CHANNELS"), EVENTS: ["ev.>"] }).jsm, base, log)).resolves.toBe("EVENTS");
  });

  it("stream name — another refusal is not taken for absence", async () => {
    const bad = new JetStreamApiError({ code: 400, err_code: 10999, description: "something else" });
    await expect(streamNameInUse(manager({ EVENTS: bad }).jsm, base, log)).rejects.toBe(bad);
  });
});
