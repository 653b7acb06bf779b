import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { startTcpProxy, type TcpProxy } from "#testkit/tcp-proxy.js";
import { httpPublish } from "#testkit/ws-client.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";
import { AUDIENCE, connect, ISSUER, refusal, SECRET, sign } from "#testkit/auth.js";
import { GatewayClient, type GatewayMessage } from "../client/src/index.js";

const API_KEY = "auto-subs-api-key-0123456789";
let nats: NatsServerHandle;
let gw: GatewayHandle;
let proxy: TcpProxy;
const clients = new ClientPool();
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const publish = (channel: string, data: unknown) => httpPublish(gw.url, channel, data, { "x-api-key": API_KEY });
const uniq = uniqueNames();

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({
    natsUrl: nats.url,
    workers: 1,
    env: { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, API_KEYS: API_KEY },
  });
  proxy = await startTcpProxy({ host: "127.0.0.1", port: gw.port });
});
afterAll(async () => {
  clients.closeAll();
  await proxy?.close();
  await gw?.stop();
  await nats?.stop();
});

describe("server-side subscriptions — channels.auto", () => {
  it("subscribes the connection at connect and says so with an auto sub frame; messages carry the pattern", async () => {
    const user = uniq("u");
    const inbox = `inbox.${user}.>`;
    const t = await sign({ channels: { sub: [`inbox.${user}.>`, "news.*"], auto: [inbox] } }, { sub: user });
    const c = clients.track(await connect(gw.wsUrl, { headers: bearer(t) }));
    const frame = await waitFor(() => c.frames.find((f) => f.op === "sub" && f.auto === true), { what: "auto sub frame" });
    expect(frame).toMatchObject({ channel: inbox, auto: true });
    expect(typeof frame.seq).toBe("number");
    expect(typeof frame.epoch).toBe("string");
    await publish(`inbox.${user}.note`, { hello: 1 });
    const [m] = await c.waitForMsgs(1);
    expect(m).toMatchObject({ channel: `inbox.${user}.note`, sub: inbox, data: { hello: 1 } });
    expect(m!.seq).toBeGreaterThan(frame.seq as number);
    // unsub ends it like any subscription
    expect(await c.request({ op: "unsub", channel: inbox })).toMatchObject({ op: "ok" });
  });

  it("a channels.auto pattern outside channels.sub refuses the token at the upgrade with a clear message", async () => {
    const t = await sign({ channels: { sub: ["inbox.bob.>"], auto: ["inbox.alice.>"] } }, { sub: "bob" });
    const r = await refusal(gw.wsUrl, { headers: bearer(t) });
    expect(r.status).toBe(401);
    expect(JSON.parse(r.body)).toMatchObject({ error: "unauthorized" });
    expect(r.body).toContain("channels.auto lists inbox.alice.>, which channels.sub does not allow");
  });

  it("the client's own sub with from:{seq} takes the auto subscription over (a resume), not already_subscribed", async () => {
    const user = uniq("u");
    const inbox = `inbox.${user}.>`;
    const t = await sign({ channels: { sub: [inbox], auto: [inbox] } }, { sub: user });
    const c = clients.track(await connect(gw.wsUrl, { headers: bearer(t) }));
    const frame = await waitFor(() => c.frames.find((f) => f.op === "sub" && f.auto === true), { what: "auto sub frame" });
    await publish(`inbox.${user}.a`, { i: 1 });
    await publish(`inbox.${user}.a`, { i: 2 });
    await c.waitForMsgs(2);
    const ok = await c.request({ op: "sub", channel: inbox, from: { seq: (frame.seq as number) + 1, epoch: frame.epoch } });
    expect(ok).toMatchObject({ op: "ok" });
    await waitFor(() => c.frames.find((f) => f.op === "live" && f.sub === inbox), { what: "live" });
    expect(c.msgs.map((m) => (m.data as { i: number }).i)).toEqual([1, 2, 1, 2]); // replayed from the asked seq
    expect((await c.request({ op: "sub", channel: inbox })).code).toBe("already_subscribed");
  });

  it("SDK: onAutoMessage gets them, and after a reconnect nothing published meanwhile is lost or repeated", async () => {
    const user = uniq("u");
    const inbox = `inbox.${user}.>`;
    const t = await sign({ channels: { sub: [inbox], auto: [inbox] } }, { sub: user });
    let gate: Promise<void> = Promise.resolve();
    let open = () => undefined as void;
    const got: GatewayMessage<{ i: number }>[] = [];
    const sdk = new GatewayClient(`ws://127.0.0.1:${proxy.port}/ws`, {
      WebSocket: WebSocket as never,
      getToken: async () => (await gate, t),
      minDelayMs: 10,
      maxDelayMs: 50,
      onAutoMessage: (m) => void got.push(m as GatewayMessage<{ i: number }>),
    });
    const autos: string[] = [];
    sdk.on("autoSubscribed", (e) => autos.push(e.channel));
    let disconnected = 0;
    sdk.on("disconnected", () => disconnected++);
    await sdk.connect();
    await waitFor(() => autos.length === 1, { what: "autoSubscribed" });
    expect(autos).toEqual([inbox]);
    for (let i = 0; i < 3; i++) await publish(`inbox.${user}.m`, { i });
    await waitFor(() => got.length === 3, { what: "3 messages" });
    gate = new Promise<void>((r) => (open = r));
    proxy.cut();
    await waitFor(() => disconnected === 1, { what: "disconnected" });
    for (let i = 3; i < 8; i++) await publish(`inbox.${user}.${i % 2 ? "m" : "n"}`, { i });
    open();
    await waitFor(() => got.length >= 8, { timeoutMs: 20_000, what: "8 messages" });
    await waitFor(() => sdk.connected, { what: "reconnected" });
    await publish(`inbox.${user}.m`, { i: 8 });
    await waitFor(() => got.length >= 9, { what: "9 messages" });
    expect(got.map((m) => m.data.i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(autos).toEqual([inbox]); // the resumed subscription is the same one
    await sdk.close();
  });
});
