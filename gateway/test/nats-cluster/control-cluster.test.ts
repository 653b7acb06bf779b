// The control plane on a real 3-node NATS cluster: two gateway instances, each connected to another node, so
// that the scatter and the replies cross the cluster's routes. A disconnect must reach sockets on both
// instances with the close code asked for, and occupancy must sum both.
import { afterAll, beforeAll, expect, it } from "vitest";
import { startNatsCluster, type NatsCluster } from "#testkit/nats-cluster.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { AUDIENCE, connect, ISSUER, SECRET, sign } from "#testkit/auth.js";
import type { TestClient } from "#testkit/ws-client.js";

const API_KEY = "cluster-control-key-0123456789";
let cluster: NatsCluster;
const gateways: GatewayHandle[] = [];
const clients = new ClientPool();
const uniq = uniqueNames();

beforeAll(async () => {
  cluster = await startNatsCluster();
  const env = { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, API_KEYS: API_KEY };
  const args = ["--stream-replicas", "3", "--shutdown-timeout", "5s"];
  // One after the other: the first creates the R3 stream, the second finds it.
  for (const url of [cluster.urls[0]!, cluster.urls[2]!]) gateways.push(await startGateway({ natsUrl: url, workers: 2, logLevel: "info", env, args }));
});
afterAll(async () => {
  clients.closeAll();
  await Promise.all(gateways.map((g) => g.stop()));
  await cluster?.stop();
});

async function socketsOf(user: string, perGateway: number): Promise<TestClient[]> {
  const token = await sign({ channels: { sub: [">"], pub: [">"] } }, { sub: user });
  const out: TestClient[] = [];
  for (const gw of gateways)
    for (let i = 0; i < perGateway; i++) out.push(clients.track(await connect(gw.wsUrl, { headers: { authorization: `Bearer ${token}` } })));
  return out;
}

const post = async (gw: GatewayHandle, path: string, body: unknown) =>
  (await (
    await fetch(`${gw.metricsUrl}/v1/server/${path}`, {
      method: "POST",
      headers: { "x-api-key": API_KEY, "content-type": "application/json" },
      body: JSON.stringify(body),
    })
  ).json()) as Record<string, unknown>;

it("control on a 3-node cluster — occupancy sums both instances, and a disconnect closes every socket of the user on both with 4403", async () => {
  const user = uniq("clu");
  const ch = uniq("clu.room");
  const mine = await socketsOf(user, 3);
  for (const c of mine) await c.sub(ch);
  const occ = (await (await fetch(`${gateways[1]!.metricsUrl}/v1/server/occupancy?channel=${ch}`, { headers: { "x-api-key": API_KEY } })).json()) as Record<
    string,
    unknown
  >;
  expect(occ).toMatchObject({ subscribers: 6, instances: 2, workers: 4, complete: true });

  const r = await post(gateways[0]!, "disconnect", { user, reconnect: false, reason: "banned" });
  expect(r).toMatchObject({ closed: 6, websocket: 6, instances: 2, workers: 4, complete: true });
  for (const c of mine) expect(await c.waitClosed()).toBe(4403);
});
