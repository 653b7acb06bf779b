// Centrifugo's HTTP server API against a real nats-server and the real CLI (2 workers), driven by the real
// clients from their registries: cent.js (npm, in process) and cent (PyPI, spawned with .tools/venv's
// python), plus raw HTTP for the error shapes. WebSocket clients of the native protocol see what the
// backend did: its publications, its unsubscribes and disconnects.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import centjs from "cent.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { AUDIENCE, connect, ISSUER, SECRET, sign } from "#testkit/auth.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import type { TestClient } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";
import { metric } from "#testkit/metrics.js";
import { CloseCode } from "../src/protocol/codes.js";

const { CentClient, CentException } = centjs;
const ADMIN_KEY = "centrifugo-admin-key-0123456789";
const PUBLISH_KEY = "centrifugo-publish-key-0123456789";
const READ_KEY = "centrifugo-read-key-0123456789";
const PYTHON = resolve(import.meta.dirname, "../../.tools/venv/bin/python");
const PY_SCRIPT = resolve(import.meta.dirname, "centrifugo/cent_every_method.py");

let nats: NatsServerHandle;
let gw: GatewayHandle;
/**
 * cent.js' methods as the test calls them: its own parameter types leave out fields the API documents
 * (idempotency_key, b64data, expired, disconnect), so they are called with plain objects.
 */
type CentMethod = (params?: Record<string, unknown>) => Promise<unknown>;
type Cent = Record<"publish" | "broadcast" | "subscribe" | "unsubscribe" | "disconnect" | "refresh", CentMethod> &
  Record<"getPresence" | "getPresenceStats" | "getHistory" | "removeHistory" | "getChannels" | "getInfo", CentMethod> & {
    pipeline(commands: { method: string; params: unknown }[]): Promise<unknown[]>;
  };
const centClient = (apiKey: string): Cent => new CentClient({ url: `${gw.url}/api`, apiKey }) as unknown as Cent;
let cent: Cent;
const clients = new ClientPool();
const uniq = uniqueNames();

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "centrifugo-api-"));
  writeFileSync(join(dir, "keys"), `${PUBLISH_KEY} publish\n${READ_KEY} read\n`);
  writeFileSync(join(dir, "namespaces.yaml"), "namespaces:\n  nohist:\n    features: { history: false }\n");
  nats = await startNatsServer();
  gw = await startGateway({
    natsUrl: nats.url,
    workers: 2,
    env: {
      JWT_SECRET: SECRET,
      JWT_ISSUER: ISSUER,
      JWT_AUDIENCE: AUDIENCE,
      API_KEYS: ADMIN_KEY,
      API_KEYS_FILE: join(dir, "keys"),
      NAMESPACES_FILE: join(dir, "namespaces.yaml"),
    },
  });
  cent = centClient(ADMIN_KEY);
});
afterAll(async () => {
  clients.closeAll();
  await gw?.stop();
  await nats?.stop();
});

/** A WebSocket of `user` allowed everything. */
async function socket(user: string): Promise<TestClient> {
  const token = await sign({ channels: { sub: [">"], pub: [">"] } }, { sub: user });
  return clients.track(await connect(gw.wsUrl, { headers: { authorization: `Bearer ${token}` } }));
}

/**
 * A refusal as cent.js and as the API give it: cent.js throws CentException (with the error object as its
 * message, so not its code); the same call over raw HTTP gives the code, which is returned.
 */
async function refused(p: Promise<unknown>, method: string, params: Record<string, unknown>, key = ADMIN_KEY): Promise<number> {
  await expect(p).rejects.toBeInstanceOf(CentException);
  const r = await raw(`/api/${method}`, JSON.stringify(params), { "x-api-key": key });
  expect(r.status).toBe(200);
  return r.json.error?.code ?? 0;
}

/** Raw `POST` to the API: status and JSON (or text) body. */
async function raw(path: string, body: string, headers: Record<string, string> = { "x-api-key": ADMIN_KEY }) {
  const r = await fetch(`${gw.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  const text = await r.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: r.status, text, json: json as { result?: Record<string, unknown>; error?: { code: number; message: string }; replies?: unknown[] } };
}

describe("centrifugo server API — cent.js", () => {
  it("publish reaches subscribers of the mapped channel; history reads it back forwards, backwards and after an offset", async () => {
    const room = uniq("room");
    const sub = await socket(uniq("u"));
    await sub.sub(`chat.${room}.1`);
    const first = (await cent.publish({ channel: `chat:${room}.1`, data: { n: 1 } })) as { offset: number; epoch: string };
    const second = (await cent.publish({ channel: `chat:${room}.1`, data: { n: 2 } })) as { offset: number; epoch: string };
    expect(second.offset).toBeGreaterThan(first.offset);
    expect(first.epoch).not.toBe("");
    const msgs = await sub.waitForMsgs(2);
    expect(msgs.map((m) => m.data)).toEqual([{ n: 1 }, { n: 2 }]);

    const all = (await cent.getHistory({ channel: `chat:${room}.1`, limit: 10 })) as {
      publications: { data: unknown; offset: number }[];
      offset: number;
      epoch: string;
    };
    expect(all.publications).toEqual([
      { data: { n: 1 }, offset: first.offset },
      { data: { n: 2 }, offset: second.offset },
    ]);
    expect(all.offset).toBeGreaterThanOrEqual(second.offset);
    expect(all.epoch).toBe(first.epoch);
    const newest = (await cent.getHistory({ channel: `chat:${room}.1`, limit: 1, reverse: true })) as { publications: { data: unknown }[] };
    expect(newest.publications.map((p) => p.data)).toEqual([{ n: 2 }]);
    const after = (await cent.getHistory({ channel: `chat:${room}.1`, limit: 10, since: { offset: first.offset, epoch: first.epoch } })) as {
      publications: { data: unknown }[];
    };
    expect(after.publications.map((p) => p.data)).toEqual([{ n: 2 }]);
    const position = (await cent.getHistory({ channel: `chat:${room}.1` })) as { publications: unknown[]; offset: number };
    expect(position.publications).toEqual([]);
    expect(
      await refused(cent.getHistory({ channel: `chat:${room}.1`, limit: 1, since: { offset: 1, epoch: "not-the-epoch" } }), "history", {
        channel: `chat:${room}.1`,
        limit: 1,
        since: { offset: 1, epoch: "not-the-epoch" },
      }),
    ).toBe(112);
  });

  it("idempotency_key dedupes per channel; b64data publishes bytes; refused options name their field", async () => {
    const ch = `news:${uniq("idem")}`;
    const a = (await cent.publish({ channel: ch, data: { once: true }, idempotency_key: "k-1" })) as { offset: number };
    const b = (await cent.publish({ channel: ch, data: { once: true }, idempotency_key: "k-1" })) as { offset: number };
    expect(b.offset).toBe(a.offset);
    const other = (await cent.publish({ channel: `${ch}.other`, data: { once: true }, idempotency_key: "k-1" })) as { offset: number };
    expect(other.offset).not.toBe(a.offset);

    const bin = `bin:${uniq("b")}`;
    const sub = await socket(uniq("u"));
    await sub.sub(`bin.${bin.slice(4)}`);
    await cent.publish({ channel: bin, b64data: Buffer.from([0, 1, 2, 255]).toString("base64") });
    const [m] = await sub.waitForMsgs(1);
    expect(m).toMatchObject({ enc: "base64", data: Buffer.from([0, 1, 2, 255]).toString("base64") });
    const h = (await cent.getHistory({ channel: bin, limit: 1 })) as { publications: { data: unknown; b64data?: string }[] };
    expect(h.publications[0]).toMatchObject({ data: null, b64data: "AAEC/w==" });

    for (const [field, value] of [
      ["tags", { a: 1 }],
      ["skip_history", true],
      ["delta", true],
    ] as const) {
      const r = await raw("/api/publish", JSON.stringify({ channel: ch, data: 1, [field]: value }));
      expect(r.json.error).toMatchObject({ code: 107 });
      expect(r.json.error?.message).toContain(field);
    }
    // Their empty values are no request for them: accepted.
    expect((await raw("/api/publish", JSON.stringify({ channel: ch, data: 1, tags: {}, skip_history: false, delta: false }))).json.result).toBeDefined();
  });

  it("broadcast publishes to every channel, one response each", async () => {
    const base = uniq("bc");
    const r = (await cent.broadcast({ channels: [`chat:${base}.a`, `chat:${base}.b`], data: { all: true } })) as {
      responses: { result: { offset: number } }[];
    };
    expect(r.responses).toHaveLength(2);
    for (const x of r.responses) expect(x.result.offset).toBeGreaterThan(0);
    const h = (await cent.getHistory({ channel: `chat:${base}.b`, limit: 5 })) as { publications: { data: unknown }[] };
    expect(h.publications.map((p) => p.data)).toEqual([{ all: true }]);
  });

  it("presence and presence_stats list the channel's members; channels and info count subscribers", async () => {
    const room = uniq("pres");
    const user = uniq("member");
    const s1 = await socket(user);
    const s2 = await socket(user);
    const ok = await s1.sub(`chat.${room}`, { presence: true });
    await s2.sub(`chat.${room}`, { presence: true });
    const p = (await cent.getPresence({ channel: `chat:${room}` })) as { presence: Record<string, { client: string; user: string }> };
    expect(Object.keys(p.presence)).toHaveLength(2);
    expect(p.presence[ok.client as string]).toMatchObject({ client: ok.client, user });
    expect(await cent.getPresenceStats({ channel: `chat:${room}` })).toEqual({ num_clients: 2, num_users: 1 });

    const chs = (await cent.getChannels({ pattern: `chat:${room}` })) as { channels: Record<string, { num_clients: number }> };
    expect(chs.channels).toEqual({ [`chat:${room}`]: { num_clients: 2 } });
    const none = (await cent.getChannels({ pattern: "nothing:*" })) as { channels: Record<string, unknown> };
    expect(none.channels).toEqual({});
    const info = await waitFor(
      async () => {
        const i = (await cent.getInfo({})) as { nodes: { uid: string; num_clients: number; num_subs: number; version: string }[] };
        return i.nodes[0] && i.nodes[0].num_clients >= 2 ? i : undefined;
      },
      { what: "info counting the two sockets" },
    );
    expect(info.nodes).toHaveLength(1);
    expect(info.nodes[0]?.num_subs).toBeGreaterThanOrEqual(2);
    expect(info.nodes[0]?.version).toMatch(/^\d+\.\d+\.\d+/);
  });

  it("unsubscribe ends the user's subscription; disconnect and refresh(expired) close the user's sockets", async () => {
    const user = uniq("ctl");
    const s = await socket(user);
    const room = uniq("unsub");
    await s.sub(`chat.${room}`);
    expect(await cent.unsubscribe({ user, channel: `chat:${room}` })).toEqual({});
    await waitFor(() => s.frames.find((f) => f.op === "unsub" && f.channel === `chat.${room}`), { what: "unsub frame" });

    expect(await cent.refresh({ user, expired: true })).toEqual({});
    expect(await s.waitClosed()).toBe(CloseCode.DisconnectedReconnect);

    const again = await socket(user);
    expect(await cent.disconnect({ user })).toEqual({});
    expect(await again.waitClosed()).toBe(CloseCode.DisconnectedFinal);
    const third = await socket(user);
    expect(await cent.disconnect({ user, disconnect: { code: 3001, reason: "come back" } })).toEqual({});
    expect(await third.waitClosed()).toBe(CloseCode.DisconnectedReconnect);
  });

  it("subscribe adds a server-side subscription to the user's /ws sockets: an auto sub frame with the stream position, then the channel's messages; session is refused by name (107)", async () => {
    const user = uniq("ssub");
    const room = uniq("ssub");
    const s = await socket(user);
    const seq0 = ((await cent.publish({ channel: `chat:${room}`, data: { n: 0 } })) as { offset: number }).offset;
    expect(await cent.subscribe({ user, channel: `chat:${room}` })).toEqual({});
    const f = await waitFor(() => s.frames.find((x) => x.op === "sub" && x.channel === `chat.${room}`), { what: "the auto sub frame" });
    expect(f).toMatchObject({ auto: true, seq: seq0, epoch: expect.any(String) });
    await cent.publish({ channel: `chat:${room}`, data: { n: 1 } });
    expect((await s.waitForMsgs(1)).map((m) => m.data)).toEqual([{ n: 1 }]);
    // Nobody connected: nothing to do, as Centrifugo answers.
    expect(await cent.subscribe({ user: uniq("nobody"), channel: `chat:${room}` })).toEqual({});
    expect(await refused(cent.subscribe({ user, channel: "chat:x", session: "s1" }), "subscribe", { user, channel: "chat:x", session: "s1" })).toBe(107);
  });

  it("history_remove and refresh without expired answer 108 not available, counted by method and code", async () => {
    const before = await metric(gw.metricsUrl, "fanout_centrifugo_api_calls_total", { method: "history_remove", result: "108" });
    expect(await refused(cent.removeHistory({ channel: "chat:x" }), "history_remove", { channel: "chat:x" })).toBe(108);
    expect(await refused(cent.refresh({ user: "x" }), "refresh", { user: "x" })).toBe(108);
    // cent.js' call and the raw one.
    await waitFor(async () => (await metric(gw.metricsUrl, "fanout_centrifugo_api_calls_total", { method: "history_remove", result: "108" })) === before + 2, {
      what: "the calls counted",
    });
  });

  it("a namespace's switch holds: history where it is off answers 108", async () => {
    expect(await refused(cent.getHistory({ channel: `nohist:${uniq("h")}`, limit: 1 }), "history", { channel: `nohist:${uniq("h")}`, limit: 1 })).toBe(108);
  });

  it("pipeline sends commands to POST /api, one per line, and reads one reply per line", async () => {
    const ch = `chat:${uniq("pipe")}`;
    const [pub, hist] = (await cent.pipeline([
      { method: "publish", params: { channel: ch, data: { piped: 1 } } },
      { method: "history", params: { channel: ch, limit: 5 } },
    ])) as [{ offset: number }, { publications: { data: unknown }[] }];
    expect(pub.offset).toBeGreaterThan(0);
    expect(hist.publications.map((p) => p.data)).toEqual([{ piped: 1 }]);
  });
});

describe("centrifugo server API — key scopes", () => {
  it("a publish key publishes but reads and acts on no connection; a read key reads but publishes nothing", async () => {
    const ch = `chat:${uniq("scope")}`;
    const pub = centClient(PUBLISH_KEY);
    const read = centClient(READ_KEY);
    expect(((await pub.publish({ channel: ch, data: 1 })) as { offset: number }).offset).toBeGreaterThan(0);
    expect(await refused(pub.getHistory({ channel: ch, limit: 1 }), "history", { channel: ch, limit: 1 }, PUBLISH_KEY)).toBe(103);
    expect(await refused(pub.disconnect({ user: "x" }), "disconnect", { user: "x" }, PUBLISH_KEY)).toBe(103);
    expect(await refused(read.publish({ channel: ch, data: 2 }), "publish", { channel: ch, data: 2 }, READ_KEY)).toBe(103);
    expect(((await read.getHistory({ channel: ch, limit: 5 })) as { publications: unknown[] }).publications).toHaveLength(1);
    expect(await refused(read.getInfo({}), "info", {}, READ_KEY)).toBe(103);
  });
});

describe("centrifugo server API — raw HTTP", () => {
  it("answers a missing or wrong key 401 with code 101, in either header form", async () => {
    const attempts: Record<string, string>[] = [{}, { "x-api-key": "wrong-key-0123456789abcdef" }, { authorization: "apikey wrong-key-0123456789abcdef" }];
    for (const headers of attempts) {
      const r = await raw("/api/info", "{}", headers);
      expect(r.status).toBe(401);
      expect(r.json.error?.code).toBe(101);
    }
    const ok = await raw("/api/info", "{}", { authorization: `apikey ${ADMIN_KEY}` });
    expect(ok.status).toBe(200);
    expect(ok.json.result?.nodes).toHaveLength(1);
  });

  it("both URL forms; unknown methods 104; bad JSON 400/107; bad params 107; browser pages 403", async () => {
    const ch = `chat:${uniq("forms")}`;
    const a = await raw("/api/publish", JSON.stringify({ channel: ch, data: { form: "path" } }));
    expect(a).toMatchObject({ status: 200, json: { result: { offset: expect.any(Number) } } });
    const b = await raw("/api", JSON.stringify({ id: 7, method: "publish", params: { channel: ch, data: { form: "api" } } }));
    expect(b.status).toBe(200);
    expect(b.json).toMatchObject({ id: 7, result: { offset: expect.any(Number) } });

    const unknownPath = await raw("/api/nope", "{}");
    expect(unknownPath).toMatchObject({ status: 404, json: { error: { code: 104 } } });
    const unknownCommand = await raw("/api", JSON.stringify({ method: "nope", params: {} }));
    expect(unknownCommand).toMatchObject({ status: 200, json: { error: { code: 104 } } });
    expect(await raw("/api/publish", "{not json")).toMatchObject({ status: 400, json: { error: { code: 107 } } });
    expect(await raw("/api", "{not json")).toMatchObject({ status: 400, json: { error: { code: 107 } } });
    for (const body of [{ data: 1 }, { channel: "chat:x" }, { channel: "chat:a..b", data: 1 }, { channel: 5, data: 1 }]) {
      const r = await raw("/api/publish", JSON.stringify(body));
      expect(r).toMatchObject({ status: 200, json: { error: { code: 107 } } });
    }
    expect(await raw("/api/publish", JSON.stringify({ channel: "chat:x" }), { "x-api-key": ADMIN_KEY, "x-centrifugo-error-mode": "transport" })).toMatchObject({
      status: 400,
      json: { error: { code: 107 } },
    });
    const page = await raw("/api/info", "{}", { "x-api-key": ADMIN_KEY, origin: "https://evil.example" });
    expect(page).toMatchObject({ status: 403, json: { error: { code: 103 } } });
    const get = await fetch(`${gw.url}/api/info`, { headers: { "x-api-key": ADMIN_KEY } });
    expect(get.status).toBe(405);
  });

  it("batch answers one reply per command, in order, sequential or parallel", async () => {
    const ch = `chat:${uniq("batch")}`;
    for (const parallel of [false, true]) {
      const r = await raw(
        "/api/batch",
        JSON.stringify({ commands: [{ publish: { channel: ch, data: { parallel } } }, { nope: {} }, { presence_stats: { channel: ch } }], parallel }),
      );
      expect(r.status).toBe(200);
      expect(r.json.replies).toEqual([
        { publish: { offset: expect.any(Number), epoch: expect.any(String) } },
        { error: { code: 104, message: expect.any(String) } },
        { presence_stats: { num_clients: 0, num_users: 0 } },
      ]);
    }
    const h = (await cent.getHistory({ channel: ch, limit: 5 })) as { publications: { data: unknown }[] };
    expect(h.publications.map((p) => p.data)).toEqual([{ parallel: false }, { parallel: true }]);
  });
});

describe("centrifugo server API — cent (Python)", () => {
  it("calls every method against the gateway", async () => {
    if (!existsSync(PYTHON)) throw new Error(`${PYTHON} is missing: run scripts/setup-deploy-tools.sh`);
    const user = uniq("py");
    const room = uniq("py");
    const s = await socket(user);
    await s.sub(`chat.${room}`, { presence: true });
    const { stdout } = await promisify(execFile)(PYTHON, [PY_SCRIPT, `${gw.url}/api`, ADMIN_KEY, `chat:${room}`, user], { timeout: 60_000 });
    const out = JSON.parse(stdout) as Record<string, Record<string, unknown>>;
    expect(out.publish).toMatchObject({ offset: expect.any(Number), epoch: expect.any(String) });
    expect(out.publish_again?.offset).toBe(out.publish?.offset);
    expect((out.broadcast?.responses as unknown[]).length).toBe(2);
    expect((out.history?.publications as { data: unknown }[]).map((p) => p.data)).toEqual([{ from: "python" }, { from: "python", to: "all" }]);
    expect(Object.values(out.presence?.presence as Record<string, { user: string }>).map((m) => m.user)).toEqual([user]);
    expect(out.presence_stats).toMatchObject({ num_clients: 1, num_users: 1 });
    expect(out.channels?.channels).toEqual({ [`chat:${room}`]: { num_clients: 1 } });
    expect((out.info?.nodes as unknown[]).length).toBe(1);
    expect(out.batch?.replies).toHaveLength(2);
    expect(out.subscribe).toEqual({});
    expect(out.history_remove).toMatchObject({ error: 108 });
    expect(out.unsubscribe).toEqual({});
    expect(out.refresh).toEqual({});
    expect(out.disconnect).toEqual({});
    await waitFor(() => s.frames.find((f) => f.op === "unsub"), { what: "unsub frame" });
    expect(await s.waitClosed()).toBe(CloseCode.DisconnectedReconnect);
  });
});
