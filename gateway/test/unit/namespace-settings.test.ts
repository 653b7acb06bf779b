import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { namespacesSection } from "../../src/namespaces/namespace.js";
import { parseNamespaces } from "../../src/namespaces/file.js";
import { effectiveSettings } from "../../src/namespaces/settings.js";
import { loadConfig } from "../../src/config/config.js";
import { sectionsOf } from "../../src/config/sections/index.js";

describe("namespaces — the settings in effect", () => {
  it("namespace settings — what a namespace leaves out comes from STREAM_* and COALESCE; its events narrow EVENTS to channel kinds", () => {
    const c = sectionsOf(loadConfig([], { STREAM_MAX_AGE: "2h", STREAM_MAX_BYTES: "-1" }).config);
    const specs = parseNamespaces(
      "namespaces:\n  chat: { maxAge: 7d, coalesce: 25ms, events: [subscribe, presence.join] }\n  q: { storage: memory, features: { history: false } }\n",
      "yaml",
    );
    const s = effectiveSettings(c.stream, namespacesSection(specs, c.stream), ["connect", "subscribe", "unsubscribe"], 10);
    expect(s.defaultStream).toMatchObject({ stream: "FANOUT_CHANNELS", maxAgeMs: 7_200_000, maxBytes: -1, storage: "file" });
    expect(s.namespaces).toHaveLength(2);
    expect(s.namespaces[0]).toMatchObject({
      name: "chat",
      stream: "FANOUT_CHANNELS_CHAT",
      maxAgeMs: 604_800_000,
      maxBytes: -1,
      coalesceMs: 25,
      events: ["subscribe"],
    });
    expect(s.namespaces[1]).toMatchObject({
      name: "q",
      prefix: "q",
      storage: "memory",
      maxAgeMs: 7_200_000,
      coalesceMs: 10,
      events: ["subscribe", "unsubscribe"],
      features: { history: false, resume: true, lastValues: true, presence: true, publish: true, sse: true, durables: true },
    });
    // JSON as /v1/stats sends it: no Set, nothing lost.
    expect(JSON.parse(JSON.stringify(s))).toEqual(s);
  });
});

describe("namespaces — the operations recipe", () => {
  it("namespace settings — docs/operations.md's 'no history at all' file parses, with history, resume and lastValues off and a maxAge over its duplicate window", () => {
    const doc = readFileSync(resolve(dirname(fileURLToPath(import.meta.url)), "../../../docs/operations.md"), "utf8");
    const yaml = /### Recipe: no history at all[\s\S]*?```yaml\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(yaml).toBeDefined();
    const [ticks] = parseNamespaces(yaml!, "yaml");
    expect(ticks).toMatchObject({ name: "ticks", storage: "memory", maxAgeMs: 60_000, duplicateWindowMs: 30_000 });
    expect(ticks!.features).toMatchObject({ history: false, resume: false, lastValues: false });
  });
});
