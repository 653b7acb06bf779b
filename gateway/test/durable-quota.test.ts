import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { connect, sign } from "#testkit/auth.js";
import { SECRET, ISSUER, AUDIENCE } from "#testkit/auth.js";

// Durable exhaustion: one user used to be able to fill the stream's consumer limit, after which every other
// user's durable `sub` failed with a permanent broker_error.
let nats: NatsServerHandle;
let gw: GatewayHandle;
const clients = new ClientPool();
const uniq = uniqueNames();
const cleanups: (() => Promise<unknown>)[] = [];
const AUTH = { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE };

const userSocket = async (g: GatewayHandle, user: string) =>
  clients.track(await connect(g.wsUrl, { headers: { authorization: `Bearer ${await sign({ channels: { sub: [">"] } }, { sub: user })}` } }));

beforeAll(async () => {
  nats = await startNatsServer();
  // Two workers: the sockets of one user land on both, and the count is the stream's, not a worker's.
  gw = await startGateway({ natsUrl: nats.url, workers: 2, logLevel: "info", env: { ...AUTH, DURABLE_MAX_PER_USER: "3" } });
});
afterAll(async () => {
  clients.closeAll();
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await gw?.stop();
  await nats?.stop();
});

describe("durable quota — DURABLE_MAX_PER_USER", () => {
  it("durable quota — a new name past the user's quota is refused with too_many_durables, temporary:false; names held can be bound again at the quota; another user is unaffected", async () => {
    const chans = [uniq("dq.a"), uniq("dq.b"), uniq("dq.c"), uniq("dq.d")];
    // One socket per durable: the sockets spread over both workers.
    for (let i = 0; i < 3; i++) {
      const s = await userSocket(gw, "mallory");
      expect(await s.request({ op: "sub", channel: chans[i], durable: `m${i}`, ack: true })).toMatchObject({ op: "ok", durable: `m${i}` });
    }
    for (let i = 0; i < 2; i++) {
      const s = await userSocket(gw, "mallory");
      expect(await s.request({ op: "sub", channel: chans[3], durable: "m3", ack: true })).toMatchObject({
        op: "err",
        code: "too_many_durables",
        temporary: false,
      });
    }
    // A durable the user already has is not a new one: bound again from a fresh socket, at the quota.
    const again = await userSocket(gw, "mallory");
    expect(await again.request({ op: "sub", channel: chans[1], durable: "m1", ack: true })).toMatchObject({ op: "ok", durable: "m1" });
    // Another user has a quota of their own, even with the same durable names.
    for (let i = 0; i < 4; i++) {
      const s = await userSocket(gw, "trent");
      const r = await s.request({ op: "sub", channel: chans[i], durable: i < 3 ? `m${i}` : "t3", ack: true });
      if (i < 3) expect(r).toMatchObject({ op: "ok" });
      else expect(r).toMatchObject({ op: "err", code: "too_many_durables" });
    }
  });

  it("durable quota — counted across gateway instances on one stream", async () => {
    const other = await startGateway({ natsUrl: nats.url, workers: 1, logLevel: "info", env: { ...AUTH, DURABLE_MAX_PER_USER: "3" } });
    cleanups.push(() => other.stop());
    for (let i = 0; i < 2; i++) {
      const s = await userSocket(gw, "oscar");
      expect(await s.request({ op: "sub", channel: uniq("dqi."), durable: `o${i}`, ack: true })).toMatchObject({ op: "ok" });
    }
    const s = await userSocket(other, "oscar");
    expect(await s.request({ op: "sub", channel: uniq("dqi."), durable: "o2", ack: true })).toMatchObject({ op: "ok" });
    const t = await userSocket(gw, "oscar");
    expect(await t.request({ op: "sub", channel: uniq("dqi."), durable: "o3", ack: true })).toMatchObject({ op: "err", code: "too_many_durables" });
  });
});

describe("durable quota — the stream's consumer limit", () => {
  it("durable quota — at STREAM_MAX_CONSUMERS a new durable is refused with durables_full, temporary:true (it used to be a permanent broker_error)", async () => {
    const n = await startNatsServer();
    cleanups.push(() => n.stop());
    const g = await startGateway({
      natsUrl: n.url,
      workers: 1,
      logLevel: "info",
      env: { ...AUTH, STREAM_MAX_CONSUMERS: "2", DURABLE_MAX_PER_USER: "-1" },
    });
    cleanups.push(() => g.stop());
    const nc: NatsConnection = await natsConnect({ servers: n.url });
    cleanups.push(() => nc.close());
    expect((await (await jetstreamManager(nc)).streams.info("FANOUT_CHANNELS")).config.max_consumers).toBe(2);
    for (const user of ["u1", "u2"]) {
      const s = await userSocket(g, user);
      expect(await s.request({ op: "sub", channel: uniq("full."), durable: "d", ack: true })).toMatchObject({ op: "ok" });
    }
    const s = await userSocket(g, "u3");
    expect(await s.request({ op: "sub", channel: uniq("full."), durable: "d", ack: true })).toMatchObject({
      op: "err",
      code: "durables_full",
      temporary: true,
    });
  });
});
