// Values nested too deep, against a real gateway (one worker) and nats-server: a presence `info`, `pub` data or
// `rpc` data deeper than the frame depth cap is refused at the door in both codecs; a member written into the
// bucket by another writer with an `info` the MessagePack encoder cannot take costs only its MessagePack
// watchers that frame (the presence watch's NATS callback keeps reading); and /readyz sees a broker connection
// that stopped answering.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JetStreamPresence } from "../src/broker/jetstream/presence.js";
import { DATA_TOO_DEEP, MAX_DATA_DEPTH, MAX_FRAME_DEPTH, TOO_DEEP } from "../src/protocol/depth.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { scrape } from "#testkit/metrics.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { waitFor } from "#testkit/wait.js";
import { httpPublish, type Frame, type TestClient } from "#testkit/ws-client.js";
import { encode } from "@msgpack/msgpack";

let nats: NatsServerHandle;
let gw: GatewayHandle;
let nc: NatsConnection;
const clients = new ClientPool(() => gw.wsUrl);
const uniq = uniqueNames(`x${process.pid}`);

/** Arrays nested `depth` levels deep. */
const nested = (depth: number): unknown => {
  let v: unknown = [];
  for (let i = 1; i < depth; i++) v = [v];
  return v;
};
const errs = (c: TestClient): Frame[] => c.frames.filter((f) => f.op === "err");
const ready = async (): Promise<number> => (await fetch(`${gw.url}/readyz`)).status;

/** Sends a frame whose answer carries no id (it is refused before it is read): the next err frame. */
async function refusal(c: TestClient, frame: Record<string, unknown> | string): Promise<Frame> {
  const before = errs(c).length;
  c.sendRaw(typeof frame === "string" ? frame : c.msgpack ? Buffer.from(encode(frame)) : JSON.stringify(frame));
  return waitFor(() => errs(c)[before], { what: "err frame" });
}

/** Publishes `n` messages over WebSocket and HTTP and waits until `sub` got them all live. */
async function publishesGoOn(sub: TestClient, ch: string, n: number): Promise<void> {
  const had = sub.msgs.length;
  const pub = await clients.open();
  for (let i = 0; i < n; i++) {
    expect(await pub.request({ op: "pub", channel: ch, data: { i } }, 4_000)).toMatchObject({ op: "ok" });
    expect((await httpPublish(gw.url, ch, { h: i })).status).toBe(201);
  }
  await sub.waitForMsgs(had + 2 * n, 10_000);
}

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 1, args: ["--presence-ttl", "2s", "--feed-linger", "100ms"] });
  nc = await connect({ servers: nats.url });
});
afterAll(async () => {
  clients.closeAll();
  await nc?.close();
  await gw?.stop();
  await nats?.stop();
});

describe("deep values — refused at the door", () => {
  it("deep values — a presence info 101 deep, in JSON and in MessagePack, is bad_request; joins, publishes and live delivery go on", async () => {
    const ch = uniq("deep.room.");
    const watchBin = await clients.open({ msgpack: true });
    const watchJson = await clients.open();
    await watchBin.sub(ch, { presence: true });
    await watchJson.sub(ch, { presence: true });
    for (const msgpack of [false, true]) {
      const c = await clients.open({ msgpack });
      // The test client's MessagePack encoder itself stops at 100 levels (the frame's map and 99 in info).
      const info = nested(msgpack ? 99 : 101);
      expect(await refusal(c, { op: "sub", id: 1, channel: ch, presence: true, info })).toMatchObject({ code: "bad_request", message: TOO_DEEP });
      expect(c.open).toBe(true);
    }
    // A member with an info as deep as a frame may hold is shown to both codecs' watchers.
    const ok = await (await clients.open()).sub(ch, { presence: true, info: { deep: nested(MAX_FRAME_DEPTH - 2) } });
    for (const w of [watchBin, watchJson]) await waitFor(() => w.frames.find((f) => f.op === "join" && f.client === ok.client), { what: "the join" });
    await publishesGoOn(watchJson, ch, 10);
    expect(await ready()).toBe(200);
  });

  it("deep values — pub and rpc data nested past the cap are bad_request (not internal), and nothing is logged per frame", async () => {
    const ch = uniq("deep.pub.");
    const sub = await clients.open();
    await sub.sub(ch);
    for (const msgpack of [false, true]) {
      const c = await clients.open({ msgpack });
      for (const depth of [MAX_FRAME_DEPTH, 99])
        expect(await refusal(c, { op: "pub", channel: ch, data: nested(depth) })).toMatchObject({ code: "bad_request", message: TOO_DEEP });
      // 20,000 deep: JSON.stringify overflowed the stack on it, which was answered `internal` and logged per frame.
      if (!msgpack) {
        const text = `{"op":"pub","channel":"${ch}","data":${"[".repeat(20_000)}${"]".repeat(20_000)}}`;
        expect(await refusal(c, text)).toMatchObject({ code: "bad_request", message: TOO_DEEP });
      }
      expect(await refusal(c, { op: "rpc", id: 1, method: "m.x", data: nested(MAX_FRAME_DEPTH) })).toMatchObject({ code: "bad_request" });
      expect(await refusal(c, { op: "pub", batch: [{ channel: ch, data: nested(MAX_FRAME_DEPTH - 2) }] })).toMatchObject({ code: "bad_request" });
    }
    // Within the cap it is published: `data` may nest MAX_FRAME_DEPTH - 1 levels in the frame's map.
    const c = await clients.open();
    expect(await c.request({ op: "pub", channel: ch, data: nested(MAX_FRAME_DEPTH - 1) })).toMatchObject({ op: "ok" });
    await sub.waitForMsgs(1);
    expect(gw.logs.filter((l) => l.msg === "request failed" || l.msg === "frame handler failed")).toEqual([]);
  });
  it("deep values — an HTTP publish (one line, several lines, a batch as an array or NDJSON) may nest as deep as a pub's data, no deeper", async () => {
    const ch = uniq("deep.http.");
    const post = async (path: string, body: string, type = "application/json") =>
      fetch(`${gw.url}${path}`, { method: "POST", body, headers: { "content-type": type } });
    const fits = JSON.stringify(nested(MAX_DATA_DEPTH));
    const deep = JSON.stringify(nested(MAX_DATA_DEPTH + 1));
    for (const body of [deep, `${deep}\n`]) {
      const r = await post(`/v1/publish/${ch}`, body);
      expect(r.status).toBe(400);
      expect(await r.json()).toMatchObject({ error: "bad_request", message: DATA_TOO_DEEP });
    }
    for (const body of [fits, `${fits}\n`]) expect((await post(`/v1/publish/${ch}`, body)).status).toBe(201);
    const item = (data: string) => `{"channel":"${ch}","data":${data}}`;
    expect((await post("/v1/publish", `[${item(deep)}]`)).status).toBe(400);
    expect((await post("/v1/publish", `${item(fits)}\n${item(deep)}\n`, "application/x-ndjson")).status).toBe(400);
    expect((await post("/v1/publish", `[${item(fits)}]`)).status).toBe(200);
    expect((await post("/v1/publish", `${item(fits)}\n`, "application/x-ndjson")).status).toBe(200);
  });
});

describe("deep values — a member the encoder cannot take, written by another writer", () => {
  it("deep values — JSON watchers get its join, MessagePack watchers miss only that frame (counted), and the presence watch keeps reading", async () => {
    const ch = uniq("deep.foreign.");
    const watchBin = await clients.open({ msgpack: true });
    const watchJson = await clients.open();
    await watchBin.sub(ch, { presence: true });
    await watchJson.sub(ch, { presence: true });
    const foreign = new JetStreamPresence(nc, jetstream(nc), { bucket: "PRESENCE", ttlMs: 2_000, replicas: 1, storage: "file" });
    await foreign.put(ch, { client: "foreign-deep", user: null, info: nested(101), joinedAt: Date.now() });
    await waitFor(() => watchJson.frames.find((f) => f.op === "join" && f.client === "foreign-deep"), { what: "the JSON watcher's join" });
    await waitFor(async () => (await scrape(gw.metricsUrl)).value("fanout_presence_encode_failures_total", { codec: "msgpack" }) >= 1, {
      what: "the failure counted",
    });
    // The watch callback still runs: a later member's join reaches both codecs, and the broker still answers.
    const ok = await (await clients.open()).sub(ch, { presence: true });
    for (const w of [watchBin, watchJson]) await waitFor(() => w.frames.find((f) => f.op === "join" && f.client === ok.client), { what: "the next join" });
    expect(watchBin.frames.find((f) => f.client === "foreign-deep")).toBeUndefined();
    await publishesGoOn(watchJson, ch, 5);
    expect(await ready()).toBe(200);
    expect(gw.logs.filter((l) => l.msg === "a presence frame could not be encoded: its watchers of this codec miss it")).toHaveLength(1);
  });
});

describe("deep values — /readyz sees a broker connection that stopped answering", () => {
  it("deep values — nats-server stopped (SIGSTOP): /readyz is 503 within seconds, before nats.js' own pings give up; 200 again after SIGCONT", async () => {
    expect(await ready()).toBe(200);
    const pid = nats.process.pid!;
    process.kill(pid, "SIGSTOP");
    const stoppedAt = Date.now();
    try {
      await waitFor(async () => (await ready()) === 503, { timeoutMs: 10_000, intervalMs: 200, what: "/readyz 503" });
      console.log(`/readyz 503 ${Date.now() - stoppedAt} ms after SIGSTOP`);
      const body = (await (await fetch(`${gw.url}/readyz`)).json()) as { broker: { connected: boolean } };
      expect(body.broker.connected).toBe(false);
    } finally {
      process.kill(pid, "SIGCONT");
    }
    await waitFor(async () => (await ready()) === 200, { timeoutMs: 30_000, intervalMs: 200, what: "/readyz 200 again" });
  });
});
