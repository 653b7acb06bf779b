import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish } from "#testkit/ws-client.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";
import { AUDIENCE, connect, ISSUER, refusal, sign } from "#testkit/auth.js";

const SECRET = "test-secret-that-is-long-enough-0123456789";
const API_KEY = "api-key-0123456789abcdef";
let nats: NatsServerHandle;
let gw: GatewayHandle;
const clients = new ClientPool();
const uniq = uniqueNames();
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({
    natsUrl: nats.url,
    workers: 1,
    logLevel: "info",
    env: { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, JWT_CLOCK_TOLERANCE: "0s", API_KEYS: `other-key-0123456789,${API_KEY}` },
  });
});
afterAll(async () => {
  clients.closeAll();
  await gw?.stop();
  await nats?.stop();
});

describe("auth — tokens at the upgrade", () => {
  it("accepts a valid token from the Authorization header, the bearer subprotocol or ?token=", async () => {
    const t = await sign({ channels: { sub: [">"] } });
    const a = clients.track(await connect(gw.wsUrl, { headers: bearer(t) }));
    const b = clients.track(await connect(gw.wsUrl, { protocols: ["fanout.v1", `bearer.${t}`] }));
    const c = clients.track(await connect(`${gw.wsUrl}?token=${t}`));
    expect(b.ws.protocol).toBe("fanout.v1"); // the token is never echoed
    for (const x of [a, b, c]) expect((await x.request({ op: "ping" })).op).toBe("pong");
    expect(gw.logs.some((l) => /AUTHENTICATION IS OFF/.test(String(l.msg)))).toBe(false);
  });

  it("refuses with 401 before any upgrade: missing, expired, wrong key, wrong audience, wrong issuer, garbage, no sub", async () => {
    const cases: [string, Promise<string> | string][] = [
      ["expired", sign({}, { exp: Math.floor(Date.now() / 1000) - 60 })],
      ["wrong key", sign({}, { key: new TextEncoder().encode("another-secret-that-is-long-enough-xx") })],
      ["wrong audience", sign({}, { aud: "someone-else" })],
      ["wrong issuer", sign({}, { iss: "https://evil.test" })],
      ["no sub", sign({}, { sub: "" })],
      ["bad channels claim", sign({ channels: { sub: ["a..b"] } })],
      ["garbage", "not.a.jwt"],
      ["alg none", `${Buffer.from('{"alg":"none"}').toString("base64url")}.${Buffer.from('{"sub":"x"}').toString("base64url")}.`],
    ];
    for (const [what, tok] of cases) {
      const r = await refusal(gw.wsUrl, { headers: bearer(await tok) });
      expect(r.status, what).toBe(401);
      expect(JSON.parse(r.body).error, what).toBe("unauthorized");
      expect(r.headers["www-authenticate"], what).toMatch(/^Bearer/);
    }
    expect((await refusal(gw.wsUrl)).status).toBe(401);
    expect((await refusal(gw.wsUrl, { protocols: ["fanout.v1"] })).status).toBe(401);
    expect((await refusal(gw.wsUrl, { protocols: [`bearer.${await sign({})}`] })).status).toBe(400); // nothing to select
  });
});

describe("auth — channel permissions", () => {
  it("sub and pub need covering permissions; replay and durables too", async () => {
    const ch = uniq("orders");
    const t = await sign({ channels: { sub: [`${ch}.*`], pub: [`${ch}.eu`] } });
    const c = clients.track(await connect(gw.wsUrl, { headers: bearer(t) }));
    expect((await c.request({ op: "sub", channel: `${ch}.eu` })).op).toBe("ok");
    expect((await c.request({ op: "sub", channel: `${ch}.*` })).op).toBe("ok");
    for (const channel of [`${ch}.>`, `${ch}.eu.x`, ">", "news.x"]) {
      expect(await c.request({ op: "sub", channel }), channel).toMatchObject({ op: "err", code: "forbidden" });
    }
    expect((await c.request({ op: "sub", channel: `${ch}.us`, from: "all" })).op).toBe("ok");
    expect(await c.request({ op: "sub", channel: `${ch}.>`, from: { last: 5 } })).toMatchObject({ code: "forbidden" });
    expect(await c.request({ op: "sub", channel: "other.x", durable: "d", ack: true })).toMatchObject({ code: "forbidden" });
    expect(await c.request({ op: "pub", channel: `${ch}.eu`, data: 1 })).toMatchObject({ op: "ok" });
    expect(await c.request({ op: "pub", channel: `${ch}.us`, data: 1 })).toMatchObject({ op: "err", code: "forbidden" });
    // a token without a channels claim may do nothing
    const none = clients.track(await connect(gw.wsUrl, { headers: bearer(await sign({})) }));
    expect(await none.request({ op: "sub", channel: "a" })).toMatchObject({ code: "forbidden" });
  });

  it("HTTP publish: 401 without or with bad credentials, 403 without the pub right, 201 with a token or an API key", async () => {
    const ch = uniq("http.pub");
    expect((await httpPublish(gw.url, ch, 1)).status).toBe(401);
    expect((await httpPublish(gw.url, ch, 1, { "x-api-key": "wrong-key-0123456789" })).status).toBe(401);
    expect((await httpPublish(gw.url, ch, 1, bearer("garbage"))).status).toBe(401);
    const reader = await sign({ channels: { sub: [">"] } });
    expect(await httpPublish(gw.url, ch, 1, bearer(reader))).toMatchObject({ status: 403, body: { error: "forbidden" } });
    const writer = await sign({ channels: { pub: ["http.>"] } });
    expect((await httpPublish(gw.url, ch, 1, bearer(writer))).status).toBe(201);
    expect((await httpPublish(gw.url, ch, 1, { "x-api-key": API_KEY })).status).toBe(201);
    expect((await httpPublish(gw.url, ch, 1, bearer(API_KEY))).status).toBe(201);
  });

  it("an API key where it is not read is refused saying where keys go: ?token= on the HTTP doors, and on the WebSocket in the URL or as the bearer", async () => {
    const enc = encodeURIComponent;
    const json = async (r: Response) => ({ status: r.status, body: (await r.json()) as { error: string; message: string } });
    const xApiKey = /X-Api-Key/;
    // History and publish read no credentials from the URL: the 401 says what they read.
    const history = await json(await fetch(`${gw.url}/v1/channels/${enc(uniq("k.h"))}/messages?token=${API_KEY}`));
    expect(history).toMatchObject({ status: 401, body: { error: "unauthorized" } });
    expect(history.body.message).toMatch(xApiKey);
    expect(history.body.message).not.toMatch(/\?token=/);
    const pub = await json(
      await fetch(`${gw.url}/v1/publish/${enc(uniq("k.p"))}?token=${API_KEY}`, { method: "POST", body: "1", headers: { "content-type": "application/json" } }),
    );
    expect(pub).toMatchObject({ status: 401 });
    expect(pub.body.message).toMatch(xApiKey);
    // SSE reads a token from ?token=, never a key.
    const sse = await json(await fetch(`${gw.url}/v1/channels/${enc(uniq("k.s"))}/events?token=${API_KEY}`));
    expect(sse).toMatchObject({ status: 401 });
    expect(sse.body.message).toMatch(xApiKey);
    // The WebSocket takes tokens only: a key is named as one, in the URL or the header.
    for (const r of [await refusal(`${gw.wsUrl}?token=${API_KEY}`), await refusal(gw.wsUrl, { headers: bearer(API_KEY) })]) {
      expect(r.status).toBe(401);
      expect(JSON.parse(r.body)).toMatchObject({
        error: "unauthorized",
        message: expect.stringMatching(/API keys are not accepted on the WebSocket.*X-Api-Key/) as string,
      });
    }
    // No credentials at all: each door names what it reads.
    const none = await json(await fetch(`${gw.url}/v1/channels/${enc(uniq("k.n"))}/messages`));
    expect(none.body.message).toBe(
      "credentials are required: Authorization: Bearer <token>, or an API key in the X-Api-Key header (this request's URL is not read for them)",
    );
    expect((await json(await fetch(`${gw.url}/v1/channels/${enc(uniq("k.n"))}/events`))).body.message).toMatch(
      /\?token=<token>, or an API key in the X-Api-Key header/,
    );
  });

  it("HTTP history needs sub rights on the channel", async () => {
    const ch = uniq("hist.a");
    expect((await httpPublish(gw.url, ch, { v: 1 }, { "x-api-key": API_KEY })).status).toBe(201);
    const get = (h: Record<string, string>) => fetch(`${gw.url}/v1/channels/${ch}/messages`, { headers: h });
    expect((await get({})).status).toBe(401);
    const other = await get(bearer(await sign({ channels: { sub: ["hist.b"], pub: [">"] } })));
    expect(other.status).toBe(403);
    expect(((await other.json()) as { error: string }).error).toBe("forbidden");
    const ok = await get(bearer(await sign({ channels: { sub: ["hist.*"] } })));
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { messages: unknown[] }).messages).toHaveLength(1);
    expect((await get({ "x-api-key": API_KEY })).status).toBe(200);
  });
});

describe("auth — expiry and refresh", () => {
  it("closes with 4001 at exp without a refresh; a refresh (same sub) keeps the socket and replaces the claims", async () => {
    const ch = uniq("ref");
    const exp = Math.floor(Date.now() / 1000) + 2;
    const short = await sign({ channels: { sub: [`${ch}.>`], pub: [`${ch}.>`] } }, { exp });
    const lazy = clients.track(await connect(gw.wsUrl, { headers: bearer(short) }));
    const keen = clients.track(await connect(gw.wsUrl, { headers: bearer(short) }));
    await keen.sub(`${ch}.a`);
    await keen.sub(`${ch}.b`);
    // refused refreshes change nothing
    expect(await keen.request({ op: "refresh", token: await sign({ channels: { sub: [">"] } }, { sub: "mallory" }) })).toMatchObject({
      op: "err",
      code: "forbidden",
    });
    expect(await keen.request({ op: "refresh", token: await sign({}, { exp: Math.floor(Date.now() / 1000) - 10 }) })).toMatchObject({ code: "forbidden" });
    expect(await keen.request({ op: "refresh", token: "garbage" })).toMatchObject({ code: "forbidden" });
    // the new claims drop ch.b and add nothing else; ch.a stays
    const newExp = Math.floor(Date.now() / 1000) + 600;
    const renewed = await keen.request({ op: "refresh", token: await sign({ channels: { sub: [`${ch}.a`], pub: [`${ch}.*`] } }, { exp: newExp }) });
    expect(renewed).toMatchObject({ op: "ok", exp: newExp });
    expect(keen.frames.some((f) => f.op === "err" && f.code === "forbidden" && String(f.message).includes(`${ch}.b`))).toBe(true);
    expect(await keen.request({ op: "sub", channel: `${ch}.c` })).toMatchObject({ code: "forbidden" });

    expect(await lazy.waitClosed(6_000)).toBe(4001);
    expect(Date.now() / 1000).toBeGreaterThanOrEqual(exp - 0.05);
    // past the first token's exp: the refreshed socket is open and delivers on ch.a only
    await keen.request({ op: "pub", channel: `${ch}.b`, data: "b" });
    await keen.request({ op: "pub", channel: `${ch}.a`, data: "a" });
    const [m] = await keen.waitForMsgs(1);
    expect(m).toMatchObject({ channel: `${ch}.a`, data: "a" });
    expect(keen.open).toBe(true);
    expect(keen.msgs.every((x) => x.channel === `${ch}.a`)).toBe(true);
  });
});

describe("auth — durable consumers are per user", () => {
  it("user B binding A's durable name gets B's own consumer: never A's messages, cannot ack them", async () => {
    const ch = uniq("dur.theft");
    const perms = { channels: { sub: [ch], pub: [ch] } };
    const alice = await sign(perms, { sub: "alice" });
    const bob = await sign(perms, { sub: "bob" });
    const a = clients.track(await connect(gw.wsUrl, { headers: bearer(alice) }));
    await a.sub(ch, { durable: "billing", ack: true });
    for (let i = 1; i <= 3; i++) await a.request({ op: "pub", channel: ch, data: { i } });
    const held = await a.waitForMsgs(3);
    a.close(); // unacked: alice's consumer keeps them for redelivery
    await a.waitClosed();

    const b = clients.track(await connect(gw.wsUrl, { headers: bearer(bob) }));
    expect(await b.sub(ch, { durable: "billing", ack: true })).toMatchObject({ op: "ok", durable: "billing" });
    for (const m of held) expect(await b.request({ op: "ack", seq: m.seq })).toMatchObject({ code: "unknown_seq" });
    const marker = await b.request({ op: "pub", channel: ch, data: { i: 4 } });
    const [got] = await b.waitForMsgs(1);
    expect(got!.seq).toBe(marker.seq); // only what was published after bob's consumer existed

    const a2 = clients.track(await connect(gw.wsUrl, { headers: bearer(alice) }));
    await a2.sub(ch, { durable: "billing", ack: true });
    const mine = await a2.waitForMsgs(4);
    expect(mine.map((m) => m.seq).sort((x, y) => x - y)).toEqual([...held.map((m) => m.seq), marker.seq as number]);
    for (const m of mine) expect(await a2.request({ op: "ack", seq: m.seq })).toMatchObject({ op: "ok" });
    await waitFor(() => b.msgs.length === 1, { what: "bob still has exactly one message" });
    expect(b.msgs.map((m) => m.seq)).toEqual([marker.seq]);
  });
});
