// The stream's own setup drifting at run time (broker/jetstream/stream-watch.ts), against a real nats-server and real
// gateways: a removed republish rule, a deleted stream and a deleted presence bucket are noticed, repaired (or
// only reported), and live subscribers lose nothing.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish } from "#testkit/ws-client.js";
import { ClientPool } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";
import { metric } from "#testkit/metrics.js";

let nats: NatsServerHandle;
let nc: NatsConnection;
let jsm: JetStreamManager;
let repairing: GatewayHandle;
let reporting: GatewayHandle;
const clients = new ClientPool();

const gateway = (stream: string, prefix: string, bucket: string, repair: string, interval: string) =>
  startGateway({
    natsUrl: nats.url,
    workers: 1,
    env: { STREAM_NAME: stream, SUBJECT_PREFIX: prefix, PRESENCE_BUCKET: bucket, STREAM_CHECK_INTERVAL: interval, STREAM_REPAIR: repair },
  });

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
  [repairing, reporting] = await Promise.all([
    gateway("DRIFTA", "da", "PRESA", "repair", "300ms"),
    // an hour between looks: what this one sees, it sees by JetStream's advisories
    gateway("DRIFTB", "db", "PRESB", "report", "1h"),
  ]);
});
afterAll(async () => {
  clients.closeAll();
  await Promise.all([repairing?.stop(), reporting?.stop()]);
  await nc?.close();
  await nats?.stop();
});

const readyz = async (gw: GatewayHandle) => {
  const r = await fetch(`${gw.url}/readyz`);
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
};
const dropRepublish = async (stream: string) => {
  const info = await jsm.streams.info(stream);
  await jsm.streams.update(stream, { ...info.config, republish: undefined });
  expect((await jsm.streams.info(stream)).config.republish).toBeUndefined();
};
const logged = (gw: GatewayHandle, msg: string, from: number) => gw.logs.slice(from).filter((l) => l.msg === msg);

describe("stream drift — noticed, repaired or reported, nothing lost", () => {
  it("a removed republish rule is put back, and a live subscriber gets every message, those published meanwhile too", async () => {
    const ws = await clients.open({ url: repairing.wsUrl });
    await ws.sub("x.live");
    await httpPublish(repairing.url, "x.live", { n: 1 });
    await ws.waitForMsgs(1);
    const from = repairing.logs.length;
    await dropRepublish("DRIFTA");
    await httpPublish(repairing.url, "x.live", { n: 2 }); // stored, not republished while the rule is gone
    await waitFor(() => logged(repairing, "stream setup drifted and was repaired", from).length > 0 || undefined, { what: "repair" });
    expect((await jsm.streams.info("DRIFTA")).config.republish).toEqual({ src: "da.>", dest: "dalive.>" });
    await httpPublish(repairing.url, "x.live", { n: 3 });
    const got = await ws.waitForMsgs(3);
    expect(got.map((m) => (m.data as { n: number }).n)).toEqual([1, 2, 3]);
    expect((await readyz(repairing)).status).toBe(200);
  });

  it("STREAM_REPAIR=report: /readyz answers 503 naming the drift, the metric says so, the stream is left as it is; 200 once it is put back", async () => {
    await dropRepublish("DRIFTB");
    const r = await waitFor(
      async () => {
        const x = await readyz(reporting);
        return x.status === 503 ? x : undefined;
      },
      { what: "readyz 503" },
    );
    expect(r.body).toMatchObject({ ready: false, stream: { drift: ["republish_changed"] } });
    expect(await metric(reporting.metricsUrl, "fanout_stream_drift", { what: "republish_changed" })).toBe(1);
    expect(reporting.logs.filter((l) => l.msg?.startsWith("the stream's setup drifted"))).toHaveLength(1);
    expect((await jsm.streams.info("DRIFTB")).config.republish).toBeUndefined();
    const info = await jsm.streams.info("DRIFTB");
    await jsm.streams.update("DRIFTB", { ...info.config, republish: { src: "db.>", dest: "dblive.>" } });
    await waitFor(async () => ((await readyz(reporting)).status === 200 ? true : undefined), { what: "readyz 200" });
  });

  it("a deleted stream is created again: a client resuming with the old epoch is told epochChanged", async () => {
    const ws = await clients.open({ url: repairing.wsUrl });
    const ok = await ws.sub("x.epoch", { from: "all" });
    const from = repairing.logs.length;
    await jsm.streams.delete("DRIFTA");
    await waitFor(() => logged(repairing, "stream setup drifted and was repaired", from).length > 0 || undefined, { what: "re-created" });
    const again = await clients.open({ url: repairing.wsUrl });
    expect(await again.sub("x.epoch", { from: { seq: 1, epoch: ok.epoch } })).toMatchObject({ op: "ok", epochChanged: true });
  });

  it("a deleted presence bucket is created again", async () => {
    const from = repairing.logs.length;
    await jsm.streams.delete("KV_PRESA");
    await waitFor(() => logged(repairing, "stream setup drifted and was repaired", from).length > 0 || undefined, { what: "bucket re-created" });
    expect((await jsm.streams.info("KV_PRESA")).config.name).toBe("KV_PRESA");
  });
});
