import { randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish } from "#testkit/ws-client.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";
import { metric, scrape } from "#testkit/metrics.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
const clients = new ClientPool(() => gw.wsUrl);
const client = () => clients.open();
const uniq = uniqueNames(`x${process.pid}`);

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 2, args: ["--max-subscriptions", "5", "--max-payload-bytes", "4KiB", "--feed-linger", "100ms"] });
});

afterAll(async () => {
  clients.closeAll();
  await gw?.stop();
  await nats?.stop();
});

describe("fan-out — live delivery", () => {
  it("delivers every message to 300 clients spread over 2 workers, in order, once", async () => {
    const ch = uniq("fan.");
    const subs = await Promise.all(Array.from({ length: 300 }, () => client()));
    await Promise.all(subs.map((c) => c.sub(ch)));
    const seqs: number[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await httpPublish(gw.url, ch, { i });
      expect(r.status).toBe(201);
      seqs.push(r.body.seq as number);
    }
    await Promise.all(subs.map((c) => c.waitForMsgs(20)));
    for (const c of subs) {
      expect(c.msgs.map((m) => m.seq)).toEqual(seqs);
      expect(c.msgs.map((m) => (m.data as { i: number }).i)).toEqual([...Array(20).keys()]);
      expect(c.msgs[0]).toMatchObject({ op: "msg", channel: ch, sub: ch });
      expect(typeof c.msgs[0]!.ts).toBe("number");
    }
    // Both workers served clients and each ran one consumer for the channel, not one per client.
    const metrics = await scrape(gw.url);
    const consumed = metrics.value("fanout_broker_messages_total");
    expect(consumed).toBeGreaterThanOrEqual(20);
    expect(consumed).toBeLessThanOrEqual(40); // 20 messages × at most 2 workers
    expect(metrics.value("fanout_frames_delivered_total")).toBeGreaterThanOrEqual(6000);
    for (const c of subs) c.close();
  });

  it("wildcards: * matches one token, > the rest", async () => {
    const base = uniq("wild");
    const star = await client();
    const gt = await client();
    await star.sub(`${base}.*`);
    await gt.sub(`${base}.>`);
    await httpPublish(gw.url, `${base}.eu`, { a: 1 });
    await httpPublish(gw.url, `${base}.eu.paris`, { a: 2 });
    await gt.waitForMsgs(2);
    await star.waitForMsgs(1);
    expect(star.msgs.map((m) => m.channel)).toEqual([`${base}.eu`]);
    expect(star.msgs[0]!.sub).toBe(`${base}.*`);
    expect(gt.msgs.map((m) => m.channel)).toEqual([`${base}.eu`, `${base}.eu.paris`]);
  });

  it("unsubscribe stops delivery; the other subscriber still receives", async () => {
    const ch = uniq("unsub.");
    const a = await client();
    const b = await client();
    await a.sub(ch);
    await b.sub(ch);
    await httpPublish(gw.url, ch, 1);
    await a.waitForMsgs(1);
    expect((await a.request({ op: "unsub", channel: ch })).op).toBe("ok");
    await httpPublish(gw.url, ch, 2);
    await b.waitForMsgs(2);
    // a pings after b got #2; the pong proves a's connection has passed that point with nothing more for it
    expect((await a.request({ op: "ping" })).op).toBe("pong");
    expect(a.msgs.length).toBe(1);
    expect((await a.request({ op: "unsub", channel: ch })).code).toBe("not_subscribed");
  });

  it("publish over WebSocket with msgId is stored once; HTTP Idempotency-Key likewise", async () => {
    const ch = uniq("dedup.");
    const sub = await client();
    await sub.sub(ch);
    const pub = await client();
    const key = uniq("k");
    const r1 = await pub.request({ op: "pub", channel: ch, data: { v: 1 }, msgId: key });
    const r2 = await pub.request({ op: "pub", channel: ch, data: { v: 1 }, msgId: key });
    expect(r1).toMatchObject({ op: "ok", duplicate: false });
    expect(r2).toMatchObject({ op: "ok", duplicate: true, seq: r1.seq });
    const h1 = await httpPublish(gw.url, ch, { v: 2 }, { "idempotency-key": `${key}h` });
    const h2 = await httpPublish(gw.url, ch, { v: 2 }, { "idempotency-key": `${key}h` });
    expect(h1).toMatchObject({ status: 201, body: { duplicate: false } });
    expect(h2).toMatchObject({ status: 201, body: { duplicate: true, seq: h1.body.seq } });
    await sub.waitForMsgs(2);
    expect((await sub.request({ op: "ping" })).op).toBe("pong");
    expect(sub.msgs.map((m) => m.data)).toEqual([{ v: 1 }, { v: 2 }]);
  });

  it("http — health, readiness, 404, 400 and 413", async () => {
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
    expect(await (await fetch(`${gw.url}/readyz`)).json()).toMatchObject({ ready: true });
    expect((await fetch(`${gw.url}/nope`)).status).toBe(404);
    const badJson = await fetch(`${gw.url}/v1/publish/a.b`, { method: "POST", headers: { "content-type": "application/json" }, body: "{nope" });
    expect(badJson.status).toBe(400);
    expect(await badJson.json()).toMatchObject({ error: "bad_json" });
    // A body on more than one line is parsed and encoded again: a number beyond a double would become null.
    const huge = await fetch(`${gw.url}/v1/publish/a.b`, { method: "POST", headers: { "content-type": "application/json" }, body: '{\n"x": 1e999\n}' });
    expect(huge.status).toBe(400);
    expect(await huge.json()).toMatchObject({ error: "bad_request", message: expect.stringMatching(/double/) });
    expect((await httpPublish(gw.url, "a.*", 1)).status).toBe(400);
    expect((await httpPublish(gw.url, "bad channel", 1)).status).toBe(400);
    expect((await httpPublish(gw.url, "a.b", { x: "y".repeat(5000) })).status).toBe(413);
  });
});

describe("fan-out — bad input never hurts the connection or others", () => {
  it("answers each bad frame with an err frame and keeps the socket open", async () => {
    const ch = uniq("bad.");
    const good = await client();
    await good.sub(ch);
    const c = await client();
    const cases: [string, string][] = [
      ["{not json", "bad_json"],
      ['"just a string"', "bad_json"],
      ['{"id":1}', "unknown_op"],
      ['{"op":"dance","id":2}', "unknown_op"],
      ['{"op":"sub","id":3}', "bad_channel"],
      ['{"op":"sub","id":4,"channel":""}', "bad_channel"],
      ['{"op":"sub","id":5,"channel":"a..b"}', "bad_channel"],
      ['{"op":"sub","id":6,"channel":"a b"}', "bad_channel"],
      ['{"op":"sub","id":7,"channel":"$JS.API.>"}', "bad_channel"],
      ['{"op":"pub","id":8,"channel":"a.*","data":1}', "bad_channel"],
      ['{"op":"pub","id":9,"channel":"a.b"}', "bad_request"],
      ['{"op":"sub","id":10,"channel":5}', "bad_channel"],
      ['{"op":"pub","id":11,"channel":"a.b","data":1,"msgId":7}', "bad_request"],
      ['{"op":"pub","id":12,"channel":"a.b","data":[1e999]}', "bad_request"],
    ];
    for (const [text] of cases) c.sendRaw(text);
    c.sendRaw(Buffer.from([1, 2, 3]));
    await waitFor(() => c.frames.filter((f) => f.op === "err").length >= cases.length + 1, { what: "err frames" });
    const errs = c.frames.filter((f) => f.op === "err");
    expect(errs.map((e) => e.code)).toEqual([...cases.map(([, code]) => code), "bad_json"]);
    expect(errs.every((e) => typeof e.message === "string" && (e.message as string).length > 0)).toBe(true);
    expect(c.open).toBe(true);
    expect((await c.request({ op: "ping" })).op).toBe("pong");
    await httpPublish(gw.url, ch, "still here");
    await good.waitForMsgs(1);
  });

  it("too_many_subscriptions past the per-connection limit, already_subscribed for a repeat", async () => {
    const c = await client();
    const base = uniq("lim");
    for (let i = 0; i < 5; i++) await c.sub(`${base}.${i}`);
    expect((await c.request({ op: "sub", channel: `${base}.x` })).code).toBe("too_many_subscriptions");
    expect((await c.request({ op: "sub", channel: `${base}.0` })).code).toBe("already_subscribed");
    expect(c.open).toBe(true);
  });

  it("a frame over the max payload closes with 1009; others are unaffected", async () => {
    const ch = uniq("big.");
    const other = await client();
    await other.sub(ch);
    const c = await client();
    c.sendRaw(JSON.stringify({ op: "pub", channel: ch, data: "z".repeat(8_000) }));
    expect(await c.waitClosed()).toBe(1009);
    await httpPublish(gw.url, ch, "ok");
    await other.waitForMsgs(1);
  });
});

describe("fan-out — one live feed per pattern, no JetStream consumer", () => {
  it("one core subscription per pattern per worker, removed after the last subscriber leaves; 0 consumers on the stream", async () => {
    const feeds = () => metric(gw.url, "fanout_live_feeds");
    const before = await feeds();
    const ch = uniq("cons.");
    const cs = await Promise.all(Array.from({ length: 40 }, () => client()));
    await Promise.all(cs.map((c) => c.sub(ch)));
    const during = await feeds();
    expect(during - before).toBeGreaterThanOrEqual(1);
    expect(during - before).toBeLessThanOrEqual(2); // 40 clients, 2 workers
    const nc = await connect({ servers: nats.url });
    const jsm = await jetstreamManager(nc);
    expect((await jsm.streams.info("FANOUT_CHANNELS")).state.consumer_count).toBe(0);
    await nc.close();
    for (const c of cs) c.close();
    await waitFor(async () => ((await feeds()) <= before ? true : undefined), { what: "feeds released after linger", timeoutMs: 10_000 });
  });
});

describe("fan-out — subprotocol negotiation (RFC 6455: only a protocol the server speaks)", () => {
  /** A raw upgrade request offering `protocols`: the status and the subprotocol the server selected. */
  const upgrade = (protocols: string): Promise<{ status: number; selected: string | undefined }> =>
    new Promise((resolve, reject) => {
      const req = httpRequest(`${gw.url}/ws`, {
        headers: {
          Connection: "Upgrade",
          Upgrade: "websocket",
          "Sec-WebSocket-Version": "13",
          "Sec-WebSocket-Key": randomBytes(16).toString("base64"),
          "Sec-WebSocket-Protocol": protocols,
        },
      });
      req.on("upgrade", (res, socket) => {
        socket.destroy();
        resolve({ status: res.statusCode ?? 0, selected: res.headers["sec-websocket-protocol"] });
      });
      req.on("response", (res) => {
        res.resume();
        resolve({ status: res.statusCode ?? 0, selected: res.headers["sec-websocket-protocol"] });
      });
      req.on("error", reject);
      req.end();
    });

  it("subprotocol — an offer of names the gateway does not speak selects none; ours is selected whatever its place", async () => {
    expect(await upgrade("fanout.v2")).toEqual({ status: 101, selected: undefined });
    expect(await upgrade("x-a, x-b")).toEqual({ status: 101, selected: undefined });
    expect(await upgrade("x-a, fanout.v1.msgpack")).toEqual({ status: 101, selected: "fanout.v1.msgpack" });
    expect(await upgrade("fanout.v2, fanout.v1")).toEqual({ status: 101, selected: "fanout.v1" });
  });
});

describe("fan-out — what PROTOCOL.md says of ids and stored text", () => {
  it("ids — a number is echoed by value (24.0 comes back 24); an over-long id gets bad_request without an id", async () => {
    const c = await client();
    c.sendRaw('{"op":"ping","id":24.0}');
    const pong = await waitFor(() => c.frames.find((f) => f.op === "pong"), { what: "pong" });
    expect(pong.id).toBe(24);
    c.sendRaw(JSON.stringify({ op: "ping", id: "x".repeat(65) }));
    const err = await waitFor(() => c.frames.find((f) => f.op === "err"), { what: "err" });
    expect(err).toMatchObject({ code: "bad_request" });
    expect(err).not.toHaveProperty("id");
  });

  it("stored text — pub data is written anew compact; an HTTP body is kept byte for byte only with no line break at all", async () => {
    const ch = uniq("text.");
    const c = await client();
    await c.sub(ch);
    c.sendRaw(`{"op":"pub","id":1,"channel":"${ch}","data":{"a": 1.50, "b": 1e3, "c": "\\u00e9"}}`);
    expect(await waitFor(() => c.frames.find((f) => f.id === 1), { what: "pub ok" })).toMatchObject({ op: "ok" });
    const oneLine = '{"a": 1.50,  "b": 1e3}';
    for (const body of [oneLine, `${oneLine}\n`]) {
      const r = await fetch(`${gw.url}/v1/publish/${ch}`, { method: "POST", body, headers: { "content-type": "application/json" } });
      expect(r.status).toBe(201);
    }
    await c.waitForMsgs(3);
    expect(c.raws.map((t) => String(t).slice(String(t).indexOf('"data":') + 7, -1))).toEqual(['{"a":1.5,"b":1000,"c":"é"}', oneLine, '{"a":1.5,"b":1000}']);
  });
});
