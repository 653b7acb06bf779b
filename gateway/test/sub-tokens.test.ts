// Subscription tokens against a real gateway and nats-server (AUTH.md "Subscription tokens"): a `sub` with
// `token` (a JWT naming one channel) reads a channel the connection's own token does not allow, and is not
// sent to the subscribe hook; a token for another channel, another user, with a bad signature or expired is
// refused; `sub_refresh` moves its expiry, and without one the subscription alone ends at exp with an `unsub`
// frame coded `subscription_expired`. SSE takes `?sub_token=` the same way, ending its stream at the expiry.
// The TypeScript SDK's getSubscriptionToken is asked at subscribe, before the expiry and at each resubscribe.
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient, type WebSocketConstructor } from "../client/src/index.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish, type Frame } from "#testkit/ws-client.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { HookBackend } from "#testkit/hook-backend.js";
import { SseReader } from "#testkit/sse-client.js";
import { waitFor } from "#testkit/wait.js";
import { AUDIENCE, connect, ISSUER, SECRET, sign } from "#testkit/auth.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
let hooks: HookBackend;
const clients = new ClientPool();
const uniq = uniqueNames();
const readers: SseReader[] = [];
const API_KEY = "api-key-0123456789abcdef";
const now = () => Math.floor(Date.now() / 1000);

beforeAll(async () => {
  nats = await startNatsServer();
  hooks = await HookBackend.start();
  // The subscribe hook refuses every read it is asked about (but `*.open` channels): a read a subscription
  // token grants never asks it.
  hooks.answer = (c) => (String(c.body.channel).endsWith(".open") ? { body: { allow: true } } : { body: { allow: false, reason: "the hook says no" } });
  gw = await startGateway({
    natsUrl: nats.url,
    workers: 1,
    env: {
      JWT_SECRET: SECRET,
      JWT_ISSUER: ISSUER,
      JWT_AUDIENCE: AUDIENCE,
      JWT_CLOCK_TOLERANCE: "0s",
      API_KEYS: API_KEY,
      SUBSCRIBE_HOOK_URL: hooks.url("/subscribe"),
    },
  });
});
afterAll(async () => {
  for (const r of readers) r.close();
  clients.closeAll();
  await gw?.stop();
  await hooks?.stop();
  await nats?.stop();
});

/** A connection of `user` whose own token allows reading nothing. */
async function bare(user = "alice") {
  const t = await sign({ channels: { sub: [], pub: [] } }, { sub: user });
  return clients.track(await connect(gw.wsUrl, { headers: { authorization: `Bearer ${t}` } }));
}

const subToken = (channel: string, o: { sub?: string; exp?: number; key?: Uint8Array; info?: unknown } = {}) =>
  sign({ channel, ...(o.info !== undefined ? { info: o.info } : {}) }, { sub: o.sub ?? "", exp: o.exp ?? now() + 600, ...(o.key ? { key: o.key } : {}) });

const publish = (channel: string, data: unknown) => httpPublish(gw.url, channel, data, { "x-api-key": API_KEY });

describe("subscription tokens — sub", () => {
  it("sub tokens — a token for the channel grants a read the connection lacks, without asking the subscribe hook", async () => {
    const ch = uniq("st.grant.");
    const c = await bare();
    expect(await c.request({ op: "sub", channel: ch })).toMatchObject({ op: "err", code: "forbidden" });
    const asked = hooks.calls.length;
    const ok = await c.sub(ch, { token: await subToken(ch, { sub: "alice" }) });
    expect(ok).toMatchObject({ op: "ok" });
    expect(hooks.calls.length).toBe(asked);
    await publish(ch, { n: 1 });
    expect((await c.waitForMsgs(1))[0]).toMatchObject({ channel: ch, data: { n: 1 } });
  });

  it("sub tokens — refused: another channel, another user, a bad signature, expired, a connection token, on a channel not its own", async () => {
    const ch = uniq("st.refuse.");
    const c = await bare();
    const wrongKey = new TextEncoder().encode("another-secret-that-is-long-enough-xx");
    const cases: [string, string, string][] = [
      ["another channel", await subToken(`${ch}.other`), "forbidden"],
      ["another user", await subToken(ch, { sub: "mallory" }), "forbidden"],
      ["bad signature", await subToken(ch, { key: wrongKey }), "forbidden"],
      ["garbage", "not.a.jwt", "forbidden"],
      ["a connection token (no channel claim)", await sign({ channels: { sub: [">"] } }), "forbidden"],
      ["expired", await subToken(ch, { exp: now() - 30 }), "subscription_expired"],
    ];
    for (const [what, token, code] of cases) {
      const r = await c.request({ op: "sub", channel: ch, token });
      expect([what, r.op, r.code]).toEqual([what, "err", code]);
    }
    // A subscription token is not a connection token either.
    await expect(connect(gw.wsUrl, { headers: { authorization: `Bearer ${await subToken(ch, { sub: "alice" })}` } })).rejects.toThrow(/401/);
  });

  it("sub tokens — the token's info is what the channel's members see of this one", async () => {
    const ch = uniq("st.info.");
    const c = await bare();
    const ok = await c.sub(ch, { token: await subToken(ch, { info: { role: "guest" } }), presence: true, info: { role: "admin" } });
    expect(ok).toMatchObject({ op: "ok" });
    const list = await c.request({ op: "sub", channel: `${ch}`, token: await subToken(ch) });
    expect(list).toMatchObject({ code: "already_subscribed" });
    const members = (await fetch(`${gw.url}/v1/channels/${ch}/presence`, { headers: { "x-api-key": API_KEY } }).then((r) => r.json())) as {
      members: { info?: unknown }[];
    };
    expect(members.members.map((m) => m.info)).toEqual([{ role: "guest" }]);
  });
});

describe("subscription tokens — expiry and sub_refresh", () => {
  it("sub tokens — without sub_refresh the subscription alone ends at exp with unsub code subscription_expired; the connection stays", async () => {
    const ch = uniq("st.exp.");
    const c = await bare();
    const openToken = await sign({ channels: { sub: [`${ch}.open`] } });
    await c.request({ op: "refresh", token: openToken });
    expect(await c.sub(`${ch}.open`)).toMatchObject({ op: "ok" });
    expect(await c.sub(ch, { token: await subToken(ch, { exp: now() + 2 }) })).toMatchObject({ op: "ok" });
    const ended = await waitFor(() => c.frames.find((f) => f.op === "unsub"), { timeoutMs: 6_000, what: "unsub at exp" });
    expect(ended).toMatchObject({ op: "unsub", channel: ch, code: "subscription_expired" });
    await publish(ch, { after: true });
    await publish(`${ch}.open`, { still: true });
    expect((await c.waitForMsgs(1))[0]).toMatchObject({ channel: `${ch}.open`, data: { still: true } });
    expect(c.msgs.some((m) => m.channel === ch)).toBe(false);
    expect((await c.request({ op: "ping" })).op).toBe("pong");
  });

  it("sub tokens — sub_refresh answers ok with the new exp and keeps the subscription past the first exp; refused ones change nothing", async () => {
    const ch = uniq("st.ref.");
    const c = await bare();
    const firstExp = now() + 2;
    expect(await c.sub(ch, { token: await subToken(ch, { exp: firstExp }) })).toMatchObject({ op: "ok" });
    const refused: [string, Frame][] = [
      ["another channel", await c.request({ op: "sub_refresh", channel: ch, token: await subToken(`${ch}.x`) })],
      ["another user", await c.request({ op: "sub_refresh", channel: ch, token: await subToken(ch, { sub: "mallory" }) })],
      ["not subscribed", await c.request({ op: "sub_refresh", channel: `${ch}.none`, token: await subToken(`${ch}.none`) })],
    ];
    expect(refused.map(([w, f]) => [w, f.code])).toEqual([
      ["another channel", "forbidden"],
      ["another user", "forbidden"],
      ["not subscribed", "not_subscribed"],
    ]);
    const newExp = now() + 600;
    expect(await c.request({ op: "sub_refresh", channel: ch, token: await subToken(ch, { exp: newExp }) })).toMatchObject({ op: "ok", exp: newExp });
    await waitFor(() => now() > firstExp + 1, { timeoutMs: 6_000, what: "past the first exp" });
    await publish(ch, { n: 2 });
    expect((await c.waitForMsgs(1))[0]).toMatchObject({ channel: ch, data: { n: 2 } });
    expect(c.frames.some((f) => f.op === "unsub")).toBe(false);
  });

  it("sub tokens — a connection refresh does not end a subscription a token granted", async () => {
    const ch = uniq("st.conn.");
    const c = await bare();
    expect(await c.sub(ch, { token: await subToken(ch) })).toMatchObject({ op: "ok" });
    expect(await c.request({ op: "refresh", token: await sign({ channels: { sub: [] } }) })).toMatchObject({ op: "ok" });
    await publish(ch, { n: 3 });
    expect((await c.waitForMsgs(1))[0]).toMatchObject({ channel: ch, data: { n: 3 } });
    expect(c.frames.filter((f) => f.op === "err" || f.op === "unsub")).toEqual([]);
  });
});

describe("subscription tokens — SSE", () => {
  it("sub tokens — ?sub_token= opens a stream the bearer alone may not, is refused for another channel, and ends at exp with subscription_expired", async () => {
    const ch = uniq("st.sse.");
    const conn = await sign({ channels: { sub: [] } });
    const url = (extra: string) => `${gw.url}/v1/channels/${encodeURIComponent(ch)}/events?token=${conn}${extra}`;
    expect((await fetch(url(""))).status).toBe(403);
    const other = await fetch(url(`&sub_token=${await subToken(`${ch}.x`)}`));
    expect([other.status, ((await other.json()) as { error: string }).error]).toEqual([403, "forbidden"]);
    const r = await SseReader.open(url(`&sub_token=${await subToken(ch, { exp: now() + 2 })}`));
    readers.push(r);
    await publish(ch, { n: 1 });
    await r.waitForSeqs(1);
    const err = await waitFor(() => r.events.find((e) => e.event === "err"), { timeoutMs: 6_000, what: "err event at exp" });
    expect(JSON.parse(err.data)).toMatchObject({ code: "subscription_expired", temporary: true });
  });
});

describe("subscription tokens — the TypeScript SDK", () => {
  it("sub tokens — getSubscriptionToken is called at subscribe, before exp (sub_refresh) and at the resubscribe after a reconnect; nothing is lost", async () => {
    const ch = uniq("st.sdk.");
    const asked: string[] = [];
    const exps: number[] = [];
    const askedAt: number[] = [];
    const client = new GatewayClient(gw.wsUrl, {
      WebSocket: WebSocket as unknown as WebSocketConstructor,
      getToken: () => sign({ channels: { sub: [] } }, { sub: "sdk-user" }),
      getSubscriptionToken: async (channel) => {
        asked.push(channel);
        askedAt.push(Date.now());
        exps.push(now() + 3);
        return subToken(channel, { sub: "sdk-user", exp: exps.at(-1)! });
      },
      minDelayMs: 50,
      maxDelayMs: 200,
    });
    const got: number[] = [];
    try {
      await client.connect();
      const sub = client.subscribe<{ n: number }>(ch, (m) => void got.push(m.data.n));
      await sub.ready;
      expect(asked).toEqual([ch]);
      await publish(ch, { n: 1 });
      await waitFor(() => got.length === 1, { what: "first message" });
      // Past the first token's exp: refreshed with sub_refresh (no unsub, no resubscribe).
      await waitFor(() => asked.length >= 2, { timeoutMs: 6_000, what: "a refresh" });
      expect(askedAt[1]!).toBeLessThan(exps[0]! * 1000); // before the expiry: a refresh, not a resubscribe after it
      const startedAt = now();
      await waitFor(() => now() > startedAt + 2, { timeoutMs: 6_000, what: "past the first exp" });
      await publish(ch, { n: 2 });
      await waitFor(() => got.length === 2, { what: "second message" });
      // The server drops the connection (the control plane, on the admin listener): the SDK reconnects and
      // asks for a token again to resubscribe.
      const before = asked.length;
      const resubscribed = new Promise<void>((resolve) => client.on("resubscribed", () => resolve()));
      const r = await fetch(`${gw.metricsUrl}/v1/server/disconnect`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": API_KEY },
        body: JSON.stringify({ user: "sdk-user", reconnect: true }),
      });
      expect(r.status).toBe(200);
      await resubscribed;
      expect(asked.length).toBeGreaterThan(before);
      await publish(ch, { n: 3 });
      await waitFor(() => got.length === 3, { what: "third message" });
      expect(got).toEqual([1, 2, 3]);
    } finally {
      await client.close();
    }
  });
});
