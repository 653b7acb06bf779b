import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseNamespaces, readNamespacesFile } from "../../src/namespaces/file.js";
import { NamespaceRoutes, spansMessage } from "../../src/namespaces/routing.js";
import { loadConfig } from "../../src/config/config.js";
import { sectionsOf } from "../../src/config/sections/index.js";
import { AccessControl, type Identity } from "../../src/auth/access.js";
import { Authenticator } from "../../src/auth/authenticator.js";
import { ANONYMOUS, apiKeyPrincipal } from "../../src/auth/principal.js";
import { GatewayError } from "../../src/errors.js";

const ns = (name: string, prefix = name) => ({ name, tokens: prefix.split(".") });
const routes = new NamespaceRoutes([ns("chat"), ns("prices"), ns("inbox", "app1.inbox")]);
const routeName = (p: string): string => {
  const r = routes.ofPattern(p);
  return r.kind === "namespace" ? r.ns.name : r.kind === "default" ? "default" : `spans:${r.names.join(",")}`;
};

describe("namespaces — routing a channel", () => {
  it("namespaces — a channel is in a namespace when its tokens start with the prefix and one more follows", () => {
    expect(routes.ofChannel("chat.room1")?.name).toBe("chat");
    expect(routes.ofChannel("chat.room1.typing")?.name).toBe("chat");
    expect(routes.ofChannel("app1.inbox.u1")?.name).toBe("inbox");
    expect(routes.ofChannel("prices.eu")?.name).toBe("prices");
  });

  it("namespaces — the prefix alone, a longer first token and other prefixes are the default stream's", () => {
    expect(routes.ofChannel("chat")).toBeUndefined();
    expect(routes.ofChannel("chatter.x")).toBeUndefined();
    expect(routes.ofChannel("app1.inbox")).toBeUndefined();
    expect(routes.ofChannel("app1.outbox.u1")).toBeUndefined();
    expect(routes.ofChannel("orders.eu")).toBeUndefined();
    expect(new NamespaceRoutes([]).ofChannel("chat.x")).toBeUndefined();
  });
});

describe("namespaces — routing a pattern", () => {
  it("namespaces — patterns inside one namespace belong to it", () => {
    expect(routeName("chat.>")).toBe("chat");
    expect(routeName("chat.*")).toBe("chat");
    expect(routeName("chat.*.typing")).toBe("chat");
    expect(routeName("app1.inbox.>")).toBe("inbox");
    expect(routeName("app1.inbox.u1")).toBe("inbox");
  });

  it("namespaces — patterns that no namespace channel matches belong to the default stream", () => {
    expect(routeName("orders.>")).toBe("default");
    expect(routeName("chat")).toBe("default");
    expect(routeName("*")).toBe("default");
    expect(routeName("app1.*")).toBe("default");
    expect(routeName("app1.outbox.>")).toBe("default");
  });

  it("namespaces — patterns that could match channels of two streams span them", () => {
    expect(routeName(">")).toBe("spans:chat,prices,inbox,the default stream");
    expect(routeName("*.x")).toBe("spans:chat,prices,the default stream");
    expect(routeName("app1.>")).toBe("spans:inbox,the default stream");
    expect(routeName("*.x.y.z")).toBe("spans:chat,prices,the default stream");
    expect(routeName("*.inbox.u1")).toBe("spans:chat,prices,inbox,the default stream");
    expect(routeName("app1.*.u1")).toBe("spans:inbox,the default stream");
    expect(spansMessage("*.x", ["chat", "the default stream"])).toBe("pattern `*.x` spans namespaces chat and the default stream; subscribe per namespace");
  });

  it("namespaces — without namespaces every pattern is the default stream's", () => {
    expect(new NamespaceRoutes([]).ofPattern(">")).toEqual({ kind: "default" });
  });
});

describe("namespaces — the file", () => {
  const yaml = `namespaces:
  chat:
    maxAge: 7d
    maxBytes: 512MiB
    allowMsgTtl: true
    features: { durables: false }
  inbox:
    prefix: app1.inbox
    stream: INBOX
    resumeWindow: 1h
`;
  const json = JSON.stringify({
    namespaces: {
      chat: { maxAge: "7d", maxBytes: "512MiB", allowMsgTtl: true, features: { durables: false } },
      inbox: { prefix: "app1.inbox", stream: "INBOX", resumeWindow: "1h" },
    },
  });

  it("namespaces — YAML and JSON read alike, with defaults for what is left out", () => {
    const a = parseNamespaces(yaml, "yaml");
    expect(a).toEqual(parseNamespaces(json, "json"));
    const [chat, inbox] = a;
    expect(chat).toMatchObject({ name: "chat", prefix: "chat", maxAgeMs: 7 * 86_400_000, maxBytes: 512 * 1_048_576, allowMsgTtl: true, resumeWindowMs: 0 });
    expect(chat?.features).toEqual({ history: true, resume: true, presence: true, publish: true, sse: true, durables: false, lastValues: true });
    expect(inbox).toMatchObject({ name: "inbox", prefix: "app1.inbox", stream: "INBOX", allowMsgTtl: false, resumeWindowMs: 3_600_000 });
    expect(inbox?.storage).toBeUndefined();
  });

  it("namespaces — files are read by extension, an empty file has none", () => {
    const dir = mkdtempSync(join(tmpdir(), "fgw-ns-"));
    writeFileSync(join(dir, "ns.yaml"), yaml);
    writeFileSync(join(dir, "ns.json"), json);
    writeFileSync(join(dir, "empty.yml"), "");
    expect(readNamespacesFile(join(dir, "ns.yaml")).namespaces).toEqual(readNamespacesFile(join(dir, "ns.json")).namespaces);
    expect(readNamespacesFile(join(dir, "empty.yml")).namespaces).toEqual([]);
    expect(() => readNamespacesFile(join(dir, "missing.yaml"))).toThrow(/cannot read .*missing.yaml: ENOENT/);
  });

  it("namespaces — each error names the namespace and the field", () => {
    const bad = (body: string) => () => parseNamespaces(`namespaces:\n  chat:\n    ${body}\n`, "yaml");
    expect(bad("maxAge: x")).toThrow('namespace "chat": maxAge must be a duration like 7d, 24h, 30s or 0, not "x"');
    expect(bad("maxBytes: lots")).toThrow('namespace "chat": maxBytes must be a size like 1GiB, 512MiB or -1, not "lots"');
    expect(bad("replicas: 7")).toThrow('namespace "chat": replicas must be an integer from 1 to 5, not 7');
    expect(bad("storage: disk")).toThrow('namespace "chat": storage must be file or memory, not "disk"');
    expect(bad("allowMsgTtl: yes please")).toThrow('namespace "chat": allowMsgTtl must be true or false');
    expect(bad("duplicateWindow: 10ms")).toThrow('namespace "chat": duplicateWindow must be at least 100ms');
    expect(bad("prefix: a..b")).toThrow('namespace "chat": prefix must be dot-separated tokens');
    expect(bad("maxage: 7d")).toThrow('namespace "chat": unknown field "maxage" (did you mean maxAge?)');
    expect(bad("features: { histroy: false }")).toThrow('namespace "chat": features: unknown field "histroy" (did you mean history?)');
    expect(bad("resumeWindow: soon")).toThrow('namespace "chat": resumeWindow must be a duration');
    expect(() => parseNamespaces("namespace: {}", "yaml")).toThrow('the file: unknown field "namespace" (did you mean namespaces?)');
    expect(() => parseNamespaces("{", "json")).toThrow(/not valid JSON/);
    expect(() => parseNamespaces("namespaces:\n  a.b: {}\n", "yaml")).toThrow('namespace "a.b": the name must be letters, digits, _ or -');
  });

  it("namespaces — prefixes that are prefixes of one another are refused", () => {
    expect(() => parseNamespaces("namespaces:\n  app: {}\n  inbox: { prefix: app.inbox }\n", "yaml")).toThrow(
      `namespace "inbox": prefix app.inbox lies inside namespace "app"'s prefix app: prefixes must not be prefixes of one another`,
    );
    expect(() => parseNamespaces("namespaces:\n  a: { prefix: x }\n  b: { prefix: x }\n", "yaml")).toThrow(/is the same as/);
  });
});

describe("namespaces — the setting", () => {
  const file = (text: string, ext = "yaml") => {
    const p = join(mkdtempSync(join(tmpdir(), "fgw-ns-")), `ns.${ext}`);
    writeFileSync(p, text);
    return p;
  };

  it("namespaces — NAMESPACES_FILE gives each namespace a stream of its own, the defaults from STREAM_*", () => {
    const p = file("namespaces:\n  chat: { maxAge: 7d, allowMsgTtl: true }\n  inbox: { prefix: app1.inbox, stream: INBOX, storage: memory }\n");
    const c = sectionsOf(loadConfig(["--namespaces-file", p, "--stream-name", "EV", "--subject-prefix", "e"], {}).config);
    const [chat, inbox] = c.namespaces.list;
    expect(chat?.stream).toMatchObject({
      name: "EV_CHAT",
      subjectPrefix: "e_ns.chat",
      livePrefix: "elive.chat",
      maxAgeMs: 7 * 86_400_000,
      allowMsgTtl: true,
      storage: "file",
    });
    expect(inbox?.stream).toMatchObject({
      name: "INBOX",
      subjectPrefix: "e_ns.app1.inbox",
      livePrefix: "elive.app1.inbox",
      storage: "memory",
      maxAgeMs: 86_400_000,
    });
    expect(chat?.channelSubjectPrefix).toBe("e_ns");
    expect(c.stream.allowMsgTtl).toBe(false);
    expect(Object.isFrozen(c.namespaces)).toBe(true);
    expect(Object.isFrozen(chat?.stream)).toBe(true);
  });

  it("namespaces — a maxAge shorter than the duplicate window (its own or the default stream's) is refused naming the namespace and both fields", () => {
    expect(() => loadConfig([], { NAMESPACES_FILE: file("namespaces:\n  brief: { maxAge: 1m }\n") })).toThrow(
      'namespace "brief": maxAge (60000 ms) is shorter than duplicateWindow (120000 ms, from STREAM_DUPLICATE_WINDOW)',
    );
    expect(() => loadConfig([], { NAMESPACES_FILE: file("namespaces:\n  brief: { maxAge: 10m, duplicateWindow: 1h }\n") })).toThrow(
      'namespace "brief": maxAge (600000 ms) is shorter than duplicateWindow (3600000 ms)',
    );
    expect(() => loadConfig([], { STREAM_MAX_AGE: "10m", NAMESPACES_FILE: file("namespaces:\n  brief: { duplicateWindow: 1h }\n") })).toThrow(
      'namespace "brief": maxAge (600000 ms, from STREAM_MAX_AGE) is shorter than duplicateWindow (3600000 ms)',
    );
    // forever (0), equal, and a short maxAge with a shorter window are fine
    for (const ns of ["{ maxAge: 0, duplicateWindow: 1h }", "{ maxAge: 2m }", "{ maxAge: 30s, duplicateWindow: 10s }"])
      expect(loadConfig([], { NAMESPACES_FILE: file(`namespaces:\n  brief: ${ns}\n`) }).config.namespaces.namespaces).toHaveLength(1);
  });

  it("namespaces — a bad file, redis, or a stream name taken is a ConfigError naming NAMESPACES_FILE", () => {
    expect(() => loadConfig([], { NAMESPACES_FILE: file("namespaces:\n  chat: { maxAge: x }\n") })).toThrow(
      'invalid NAMESPACES_FILE (--namespaces-file): namespace "chat": maxAge must be a duration',
    );
    expect(() => loadConfig(["--broker", "redis"], { NAMESPACES_FILE: file("namespaces:\n  chat: {}\n") })).toThrow(/namespaces need BROKER=jetstream/);
    expect(() => loadConfig([], { NAMESPACES_FILE: file("namespaces:\n  chat: { stream: FANOUT_CHANNELS }\n") })).toThrow(
      'namespace "chat": stream FANOUT_CHANNELS is already the default stream (STREAM_NAME)\'s',
    );
    expect(() => loadConfig([], { NAMESPACES_FILE: file("namespaces:\n  a: {}\n  b: { stream: FANOUT_CHANNELS_A }\n") })).toThrow(
      'namespace "b": stream FANOUT_CHANNELS_A is already namespace "a"\'s',
    );
    expect(() => loadConfig([], { NAMESPACES_FILE: file("namespaces:\n  a: { stream: KV_PRESENCE }\n") })).toThrow(/the presence bucket/);
  });
});

describe("namespaces — the authorization chain", () => {
  const p = join(mkdtempSync(join(tmpdir(), "fgw-ns-")), "ns.yaml");
  writeFileSync(
    p,
    "namespaces:\n  chat: { allowMsgTtl: true, features: { history: false, publish: false } }\n  prices: { features: { resume: false, sse: false, presence: false, durables: false, lastValues: false } }\n",
  );
  const access = new AccessControl(
    new Authenticator(sectionsOf(loadConfig([], {}).config).auth),
    undefined,
    undefined,
    sectionsOf(loadConfig(["--namespaces-file", p], {}).config).namespaces,
  );
  const anon: Identity = { principal: ANONYMOUS, ip: "", identified: false, trusted: false };
  const key: Identity = { principal: apiKeyPrincipal(["publish", "read"]), ip: "", identified: true, trusted: true };
  const codeOf = async (id: Identity, a: Parameters<AccessControl["authorize"]>[1]): Promise<string> =>
    access.authorize(id, a).then(
      () => "ok",
      (e: unknown) => (e instanceof GatewayError ? e.code : String(e)),
    );

  it("namespaces — a spanning pattern is bad_channel, a switched-off feature feature_disabled", async () => {
    expect(await codeOf(anon, { right: "sub", channel: ">" })).toBe("bad_channel");
    expect(await codeOf(anon, { right: "sub", channel: "*.x" })).toBe("bad_channel");
    expect(await codeOf(anon, { right: "sub", channel: "chat.x" })).toBe("ok");
    expect(await codeOf(anon, { right: "sub", channel: "chat.x", uses: ["history"] })).toBe("feature_disabled");
    expect(await codeOf(anon, { right: "sub", channel: "chat.x", uses: ["resume", "sse", "presence", "durables", "lastValues"] })).toBe("ok");
    for (const f of ["resume", "sse", "presence", "durables", "lastValues"] as const)
      expect(await codeOf(anon, { right: "sub", channel: "prices.>", uses: [f] })).toBe("feature_disabled");
    expect(await codeOf(anon, { right: "sub", channel: "prices.>", uses: ["history"] })).toBe("ok");
    expect(await codeOf(anon, { right: "sub", channel: "orders.x", uses: ["history", "resume", "sse"] })).toBe("ok");
  });

  it("namespaces — clients may not publish where publish is off, trusted keys may; ttl only where the stream allows it", async () => {
    expect(await codeOf(anon, { right: "pub", channel: "chat.x" })).toBe("feature_disabled");
    expect(await codeOf(key, { right: "pub", channel: "chat.x", ttl: "60s" })).toBe("ok");
    expect(await codeOf(anon, { right: "pub", channel: "prices.x", ttl: "60s" })).toBe("feature_disabled");
    expect(await codeOf(anon, { right: "pub", channel: "orders.x", ttl: "60s" })).toBe("feature_disabled");
    expect(await codeOf(anon, { right: "pub", channel: "orders.x" })).toBe("ok");
  });
});
