// The publish hook (PUBLISH_HOOK_URL) at every door that writes a channel: a WebSocket `pub`, an item of a
// WebSocket batch `pub`, an HTTP publish, an item of an HTTP batch, and the control plane's broadcast. Real gateways, a real NATS server and a real hook backend; what was stored
// is read back through history. One gateway's hook answers as the test says; the other's hook is down (a
// closed port), and it asks about API-key publishes too (PUBLISH_HOOK_API_KEYS=true).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish } from "#testkit/ws-client.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { HookBackend } from "#testkit/hook-backend.js";
// A port nothing listens on: the down gateway's hook is refused at once.
import { closedUrl } from "#testkit/closed-port.js";
import { AUDIENCE, connect, ISSUER, SECRET, sign } from "#testkit/auth.js";

const API_KEY = "pubhook-api-key-0123456789";
let nats: NatsServerHandle;
let backend: HookBackend;
let gw: GatewayHandle;
let gwDown: GatewayHandle;
const clients = new ClientPool();
const uniq = uniqueNames();

beforeAll(async () => {
  backend = await HookBackend.start();
  nats = await startNatsServer();
  const env = { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, API_KEYS: API_KEY, HOOK_TIMEOUT: "3s" };
  [gw, gwDown] = await Promise.all([
    startGateway({ natsUrl: nats.url, workers: 1, env: { ...env, PUBLISH_HOOK_URL: backend.url("/publish") } }),
    // its own control subjects: a broadcast sent to it is not taken by the other gateway on the same NATS
    startGateway({
      natsUrl: nats.url,
      workers: 1,
      env: { ...env, PUBLISH_HOOK_URL: closedUrl("/publish"), PUBLISH_HOOK_API_KEYS: "true", CONTROL_SUBJECT_PREFIX: "phdownctl" },
    }),
  ]);
});
afterAll(async () => {
  clients.closeAll();
  await Promise.all([gw?.stop(), gwDown?.stop()]);
  await nats?.stop();
  await backend?.stop();
});

type Door = "ws" | "ws-batch" | "http" | "batch";
const DOORS: readonly Door[] = ["ws", "ws-batch", "http", "batch"];
/** What a door answered: stored (seq), or refused with a wire code. */
type Outcome = { seq: number } | { error: string; temporary: boolean; message: string };

/** One publish through one door, with a bearer token or (not at the WebSocket) an API key. */
async function publishAt(door: Door, g: GatewayHandle, channel: string, data: unknown, auth: { token: string } | { apiKey: string }): Promise<Outcome> {
  const headers: Record<string, string> = "token" in auth ? { authorization: `Bearer ${auth.token}` } : { "x-api-key": auth.apiKey };
  if (door === "ws") {
    const ws = clients.track(await connect(g.wsUrl, { headers }));
    const f = await ws.request({ op: "pub", channel, data });
    return f.op === "ok" ? { seq: f.seq as number } : { error: f.code as string, temporary: f.temporary as boolean, message: f.message as string };
  }
  if (door === "ws-batch") {
    const ws = clients.track(await connect(g.wsUrl, { headers }));
    const f = await ws.request({ op: "pub", batch: [{ channel, data }] });
    expect(f.op).toBe("ok");
    return (f.results as Outcome[])[0]!;
  }
  if (door === "http") {
    const r = await httpPublish(g.url, channel, data, headers);
    return r.status === 201 ? { seq: r.body.seq as number } : (r.body as Outcome);
  }
  const r = await fetch(`${g.url}/v1/publish`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify([{ channel, data }]),
  });
  expect(r.status).toBe(200);
  return ((await r.json()) as { results: Outcome[] }).results[0]!;
}

/** The data stored on a channel, oldest first (read with the API key: no hook is asked for it). */
async function stored(channel: string): Promise<unknown[]> {
  const r = await fetch(`${gw.url}/v1/channels/${encodeURIComponent(channel)}/messages`, { headers: { "x-api-key": API_KEY } });
  expect(r.status).toBe(200);
  return ((await r.json()) as { messages: { data: unknown }[] }).messages.map((m) => m.data);
}

const userToken = (user: string) => sign({ channels: { sub: ["ph.>"], pub: ["ph.>"] } }, { sub: user });

/** The hook of these tests: it reads what to answer from the published data's `hook` field. */
function answerFromData(): void {
  backend.answer = (c) => {
    const d = (c.body.data ?? {}) as { hook?: string };
    if (d.hook === "deny-code") return { body: { allow: false, code: "rate_limited", message: "slow down" } };
    if (d.hook === "deny-unknown") return { body: { allow: false, code: "no_such_code", message: "not here" } };
    if (d.hook === "deny") return { body: { allow: false } };
    if (d.hook === "replace") return { body: { allow: true, data: { replaced: true, was: d } } };
    return { body: { allow: true } };
  };
}

describe("publish hook — every door", () => {
  it.each(DOORS)("%s: allowed publishes are stored as sent; the hook is told the user, client, channel and data", async (door) => {
    answerFromData();
    const user = uniq("alice");
    const channel = `ph.${uniq(`allow-${door}`)}`;
    const out = await publishAt(door, gw, channel, { hook: "allow", n: 1 }, { token: await userToken(user) });
    expect(out).toMatchObject({ seq: expect.any(Number) });
    expect(await stored(channel)).toEqual([{ hook: "allow", n: 1 }]);
    const calls = backend.callsTo("/publish", (b) => b.channel === channel);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.body).toMatchObject({ user, channel, data: { hook: "allow", n: 1 }, ip: expect.any(String) });
    // the WebSocket's client id is known; an HTTP request has none
    if (door.startsWith("ws")) expect(calls[0]!.body.client).toMatch(/^[A-Za-z0-9_-]{16}$/);
    else expect(calls[0]!.body.client).toBeNull();
  });

  it.each(DOORS)("%s: a denial refuses the publish with the hook's wire code, or forbidden; nothing is stored", async (door) => {
    answerFromData();
    const token = await userToken(uniq("bob"));
    const channel = `ph.${uniq(`deny-${door}`)}`;
    expect(await publishAt(door, gw, channel, { hook: "deny-code" }, { token })).toMatchObject({
      error: "rate_limited",
      message: expect.stringContaining("slow down"),
    });
    expect(await publishAt(door, gw, channel, { hook: "deny-unknown" }, { token })).toMatchObject({
      error: "forbidden",
      temporary: false,
      message: expect.stringContaining("not here"),
    });
    expect(await publishAt(door, gw, channel, { hook: "deny" }, { token })).toMatchObject({ error: "forbidden", temporary: false });
    expect(await stored(channel)).toEqual([]);
  });

  it.each(DOORS)("%s: data the hook replaces is stored instead of what was sent", async (door) => {
    answerFromData();
    const channel = `ph.${uniq(`replace-${door}`)}`;
    expect(await publishAt(door, gw, channel, { hook: "replace", secret: "x" }, { token: await userToken(uniq("carol")) })).toMatchObject({
      seq: expect.any(Number),
    });
    expect(await stored(channel)).toEqual([{ replaced: true, was: { hook: "replace", secret: "x" } }]);
  });

  it("http: a body stored as sent reaches the hook as those bytes: duplicate keys and numbers past 2^53 as readers get them", async () => {
    backend.answer = () => ({ body: { allow: true } });
    const channel = `ph.${uniq("as-sent")}`;
    const body = '{"text":"DENY","text":"fine","id":12345678901234567890,"f":1.0e2}';
    const r = await fetch(`${gw.url}/v1/publish/${encodeURIComponent(channel)}`, {
      method: "POST",
      body,
      headers: { "content-type": "application/json", authorization: `Bearer ${await userToken(uniq("dan"))}` },
    });
    expect(r.status).toBe(201);
    const calls = backend.callsTo("/publish", (b) => b.channel === channel);
    expect(calls).toHaveLength(1);
    // Not a re-encoding ({"text":"fine","id":12345678901234567000,"f":100}): the very text that was stored.
    expect(calls[0]!.raw).toContain(`"data":${body}}`);
    expect(calls[0]!.body).toMatchObject({ channel, client: null });
  });

  it("binary payloads: the hook is told the bytes in base64 with enc and type; allowed bytes are stored as bytes, replaced ones as the hook's JSON", async () => {
    const bytes = Uint8Array.from([0, 255, 1]);
    const [kept, replaced] = [`ph.${uniq("bin-kept")}`, `ph.${uniq("bin-replaced")}`];
    backend.answer = (c) => (c.body.channel === replaced ? { body: { allow: true, data: { scrubbed: true } } } : { body: { allow: true } });
    const headers = { authorization: `Bearer ${await userToken(uniq("dora"))}`, "content-type": "application/octet-stream" };
    for (const channel of [kept, replaced]) expect((await fetch(`${gw.url}/v1/publish/${channel}`, { method: "POST", headers, body: bytes })).status).toBe(201);
    expect(backend.callsTo("/publish", (b) => b.channel === kept)[0]!.body).toMatchObject({ data: "AP8B", enc: "base64", type: "application/octet-stream" });
    expect(await stored(kept)).toEqual(["AP8B"]);
    expect(await stored(replaced)).toEqual([{ scrubbed: true }]);
  });

  it.each(DOORS)("%s: the hook down fails closed: hook_unavailable, temporary, nothing stored", async (door) => {
    const channel = `ph.${uniq(`down-${door}`)}`;
    expect(await publishAt(door, gwDown, channel, { n: 1 }, { token: await userToken(uniq("dave")) })).toMatchObject({
      error: "hook_unavailable",
      temporary: true,
    });
    expect(await stored(channel)).toEqual([]);
  });

  it.each(["ws-batch", "batch"] as const)("%s: the hook decides per item: a denied item is refused in its place, the others stored in order", async (door) => {
    answerFromData();
    const token = await userToken(uniq("erin"));
    const channel = `ph.${uniq(`items-${door}`)}`;
    const items = [
      { hook: "allow", n: 1 },
      { hook: "deny-code", n: 2 },
      { hook: "replace", n: 3 },
      { hook: "allow", n: 4 },
    ].map((data) => ({ channel, data }));
    let results: Outcome[];
    if (door === "ws-batch") {
      const ws = clients.track(await connect(gw.wsUrl, { headers: { authorization: `Bearer ${token}` } }));
      results = (await ws.request({ op: "pub", batch: items })).results as Outcome[];
    } else {
      const r = await fetch(`${gw.url}/v1/publish`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify(items),
      });
      results = ((await r.json()) as { results: Outcome[] }).results;
    }
    expect(results).toMatchObject([{ seq: expect.any(Number) }, { error: "rate_limited" }, { seq: expect.any(Number) }, { seq: expect.any(Number) }]);
    expect(await stored(channel)).toEqual([
      { hook: "allow", n: 1 },
      { replaced: true, was: { hook: "replace", n: 3 } },
      { hook: "allow", n: 4 },
    ]);
    expect(backend.callsTo("/publish", (b) => b.channel === channel)).toHaveLength(4);
  });

  it.each(["http", "batch"] as const)("%s: an API key skips the hook, unless PUBLISH_HOOK_API_KEYS=true", async (door) => {
    backend.answer = () => ({ body: { allow: false, message: "users only" } });
    const channel = `ph.${uniq(`key-${door}`)}`;
    expect(await publishAt(door, gw, channel, { by: "key" }, { apiKey: API_KEY })).toMatchObject({ seq: expect.any(Number) });
    expect(backend.callsTo("/publish", (b) => b.channel === channel)).toHaveLength(0);
    // the same key where the setting asks the (down) hook about keys too: refused, nothing more stored
    expect(await publishAt(door, gwDown, channel, { by: "key again" }, { apiKey: API_KEY })).toMatchObject({ error: "hook_unavailable", temporary: true });
    expect(await stored(channel)).toEqual([{ by: "key" }]);
  });

  it("control-plane broadcast: an API key's publish, so it skips the hook unless PUBLISH_HOOK_API_KEYS=true", async () => {
    backend.answer = () => ({ body: { allow: false, message: "users only" } });
    const channel = `ph.${uniq("broadcast")}`;
    const broadcast = async (g: GatewayHandle, data: unknown) => {
      const r = await fetch(`${g.metricsUrl}/v1/server/broadcast`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": API_KEY },
        body: JSON.stringify({ channels: [channel], data }),
      });
      expect(r.status).toBe(200);
      return ((await r.json()) as { results: Outcome[] }).results[0]!;
    };
    expect(await broadcast(gw, { by: "broadcast" })).toMatchObject({ seq: expect.any(Number) });
    expect(backend.callsTo("/publish", (b) => b.channel === channel)).toHaveLength(0);
    expect(await broadcast(gwDown, { by: "broadcast again" })).toMatchObject({ error: "hook_unavailable", temporary: true });
    expect(await stored(channel)).toEqual([{ by: "broadcast" }]);
  });
});
