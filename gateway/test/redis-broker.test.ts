// The Redis pub/sub broker (--broker redis) behind the same protocol: a real redis-server, the real CLI.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REDIS_SERVER_BIN, startRedisServer, type RedisServerHandle } from "#testkit/redis-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish, TestClient } from "#testkit/ws-client.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";
import { metric } from "#testkit/metrics.js";

let redis: RedisServerHandle;
let restarted: ChildProcess | undefined;
let gw: GatewayHandle;
const clients = new ClientPool(() => gw.wsUrl);
const client = () => clients.open();
const uniq = uniqueNames(`x${process.pid}`);
type Sock = { _socket: { pause(): void; resume(): void } };

const readyz = async (url: string): Promise<number> => (await fetch(`${url}/readyz`)).status;

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

beforeAll(async () => {
  redis = await startRedisServer();
  gw = await startGateway({
    workers: 2,
    logLevel: "info",
    args: [
      "--broker",
      "redis",
      "--redis-url",
      redis.url,
      "--feed-linger",
      "100ms",
      "--backpressure-bytes",
      "64KiB",
      "--max-backpressure-bytes",
      "64MiB",
      "--slow-consumer-timeout",
      "60s",
    ],
  });
});

afterAll(async () => {
  clients.closeAll();
  await gw?.stop();
  if (restarted && restarted.exitCode === null) {
    const exited = new Promise((r) => restarted!.once("exit", r));
    restarted.kill("SIGTERM");
    await exited;
  }
  await redis?.stop();
});

describe("redis broker — live fan-out", () => {
  it("redis — WS and HTTP publishes reach 60 clients on 2 workers once, in order, with increasing seq", async () => {
    const ch = uniq("rfan.");
    const subs = await Promise.all(Array.from({ length: 60 }, () => client()));
    await Promise.all(subs.map((c) => c.sub(ch)));
    const pub = await client();
    const seqs: number[] = [];
    for (let i = 0; i < 20; i++) {
      if (i % 2 === 0) {
        const r = await httpPublish(gw.url, ch, { i });
        expect(r.status).toBe(201);
        seqs.push(r.body.seq as number);
      } else {
        const r = await pub.request({ op: "pub", channel: ch, data: { i } });
        expect(r).toMatchObject({ op: "ok", duplicate: false });
        seqs.push(r.seq as number);
      }
    }
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBeGreaterThan(seqs[i - 1]!);
    await Promise.all(subs.map((c) => c.waitForMsgs(20)));
    for (const c of subs) {
      expect(c.msgs.map((m) => m.seq)).toEqual(seqs);
      expect(c.msgs.map((m) => (m.data as { i: number }).i)).toEqual([...Array(20).keys()]);
      expect(c.msgs[0]).toMatchObject({ op: "msg", channel: ch, sub: ch });
      expect(Math.abs(c.msgs[0]!.ts - Date.now())).toBeLessThan(30_000);
    }
    // One Redis subscription per worker, not one per client: each message is consumed at most twice.
    const consumed = await metric(gw.url, "fanout_broker_messages_total");
    expect(consumed).toBeGreaterThanOrEqual(20);
    expect(await metric(gw.url, "fanout_frames_delivered_total")).toBeGreaterThanOrEqual(1200);
    for (const c of subs) c.close();
  });

  it("redis — wildcards: * is one token, > the rest, although the Redis glob over-matches; glob characters in tokens are literal", async () => {
    const base = uniq("rw");
    const star = await client();
    const gt = await client();
    const mid = await client();
    const lit = await client();
    await star.sub(`${base}.*`);
    await gt.sub(`${base}.>`);
    await mid.sub(`${base}.*.eu`);
    await lit.sub(`${base}.g[1]?.*`);
    const pub = await client();
    // The last three are markers: each client's list ends with one, so "nothing else arrived" is checked.
    const sent = ["a", "a.eu", "a.b.eu", "b.eu.x", "g1x.y", "g[1]?.y", "g[1]?.y.z", "z", "z.eu", "g[1]?.z"];
    for (const c of sent) expect(await pub.request({ op: "pub", channel: `${base}.${c}`, data: { c } })).toMatchObject({ op: "ok" });
    const got = (tc: TestClient) => tc.msgs.map((m) => (m.data as { c: string }).c);
    await waitFor(() => got(star).includes("z") && got(mid).includes("z.eu") && got(lit).includes("g[1]?.z") && got(gt).includes("g[1]?.z"), {
      what: "markers",
    });
    expect(got(star)).toEqual(["a", "z"]);
    expect(got(gt)).toEqual(sent);
    expect(got(mid)).toEqual(["a.eu", "z.eu"]);
    expect(got(lit)).toEqual(["g[1]?.y", "g[1]?.z"]);
    expect(star.msgs[0]).toMatchObject({ channel: `${base}.a`, sub: `${base}.*` });
    const gtSeqs = gt.msgs.map((m) => m.seq);
    for (let i = 1; i < gtSeqs.length; i++) expect(gtSeqs[i]).toBeGreaterThan(gtSeqs[i - 1]!);
  });

  it("redis — a repeated msgId / Idempotency-Key is published once and answered with the original seq", async () => {
    const ch = uniq("rdup.");
    const sub = await client();
    await sub.sub(ch);
    const pub = await client();
    const first = await pub.request({ op: "pub", channel: ch, data: { n: 1 }, msgId: "m-1" });
    const again = await pub.request({ op: "pub", channel: ch, data: { n: 1 }, msgId: "m-1" });
    expect(first).toMatchObject({ op: "ok", duplicate: false });
    expect(again).toMatchObject({ op: "ok", duplicate: true, seq: first.seq });
    const h1 = await httpPublish(gw.url, ch, { n: 2 }, { "idempotency-key": "k-2" });
    const h2 = await httpPublish(gw.url, ch, { n: 2 }, { "idempotency-key": "k-2" });
    expect(h1.body).toMatchObject({ duplicate: false });
    expect(h2.body).toMatchObject({ duplicate: true, seq: h1.body.seq });
    await pub.request({ op: "pub", channel: ch, data: { n: 3 } });
    await sub.waitForMsgs(3);
    expect(sub.msgs.map((m) => (m.data as { n: number }).n)).toEqual([1, 2, 3]);
  });

  it("redis — a message PUBLISHed straight into Redis by another program arrives with seq 0 (text when not JSON)", async () => {
    const ch = uniq("rraw.");
    const sub = await client();
    await sub.sub(ch);
    const r = new Redis(redis.url);
    try {
      await r.publish(`ev.${ch}`, "plain words");
      await r.publish(`ev.${ch}`, '{"j":1}');
    } finally {
      r.disconnect();
    }
    await sub.waitForMsgs(2);
    expect(sub.msgs[0]).toMatchObject({ channel: ch, seq: 0, enc: "text", data: "plain words" });
    expect(sub.msgs[1]).toMatchObject({ channel: ch, seq: 0, data: { j: 1 } });
  });
});

describe("redis broker — what pub/sub cannot do", () => {
  it("redis — from, durable and history are refused with unsupported_by_broker; the socket stays usable", async () => {
    const c = await client();
    for (const from of ["all", { seq: 1 }, { last: 5 }, { time: "2026-01-01T00:00:00Z" }]) {
      expect(await c.request({ op: "sub", channel: uniq("run."), from })).toMatchObject({ op: "err", code: "unsupported_by_broker" });
    }
    expect(await c.request({ op: "sub", channel: uniq("run."), durable: "billing", ack: true })).toMatchObject({ op: "err", code: "unsupported_by_broker" });
    const hist = await fetch(`${gw.url}/v1/channels/${uniq("run.")}/messages?last=5`);
    expect(hist.status).toBe(501);
    expect(await hist.json()).toMatchObject({ error: "unsupported_by_broker" });
    const hist2 = await fetch(`${gw.url}/v1/channels/${uniq("run.")}/messages?from_seq=1`);
    expect(hist2.status).toBe(501);
    expect(await c.request({ op: "ping" })).toMatchObject({ op: "pong" });
    expect(await c.request({ op: "sub", channel: uniq("run.") })).toMatchObject({ op: "ok" });
  });

  it("redis — binary payloads (bytes with a content type) are refused with unsupported_by_broker on every door; JSON still publishes", async () => {
    const ch = uniq("bin.");
    const r = await fetch(`${gw.url}/v1/publish/${ch}`, {
      method: "POST",
      body: Uint8Array.from([0, 255]),
      headers: { "content-type": "application/octet-stream" },
    });
    expect(r.status).toBe(501);
    expect(await r.json()).toMatchObject({ error: "unsupported_by_broker" });
    const c = await client();
    expect(await c.request({ op: "pub", channel: ch, enc: "base64", data: "AP8=" })).toMatchObject({ op: "err", code: "unsupported_by_broker" });
    expect(await c.request({ op: "pub", channel: ch, data: { ok: true } })).toMatchObject({ op: "ok" });
  });
});

describe("redis broker — the control plane", () => {
  it("redis — control requests reach both workers over Redis pub/sub: occupancy, disconnect, broadcast", async () => {
    const ch = uniq("ctl.");
    const subs = await Promise.all(Array.from({ length: 6 }, () => client()));
    for (const c of subs) await c.sub(ch);
    const occ = await fetch(`${gw.url}/v1/server/occupancy?channel=${ch}`);
    expect(occ.status).toBe(200);
    expect(await occ.json()).toMatchObject({ channel: ch, subscribers: 6, instances: 1, workers: 2, complete: true });
    const bc = await fetch(`${gw.url}/v1/server/broadcast`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ channels: [ch], data: { hi: 1 } }),
    });
    expect(bc.status).toBe(200);
    for (const c of subs) expect((await c.waitForMsgs(1))[0]).toMatchObject({ channel: ch, data: { hi: 1 } });
    // Authentication is off: every socket is user anon.
    const dis = await fetch(`${gw.url}/v1/server/disconnect`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ user: "anon", reconnect: true }),
    });
    expect(await dis.json()).toMatchObject({ workers: 2, complete: true });
    for (const c of subs) expect(await c.waitClosed()).toBe(4012);
  });
});

describe("redis broker — slow clients", () => {
  it("redis — a client that stops reading is taken out of live delivery, rejoins, and its missed deliveries are counted as dropped", async () => {
    const ch = uniq("rbp.");
    const slow = await client();
    const fast = await client();
    await slow.sub(ch);
    await fast.sub(ch);
    const droppedBefore = await metric(gw.url, "fanout_deliveries_dropped_total");
    (slow.ws as unknown as Sock)._socket.pause();
    const r = new Redis(redis.url);
    const payload = JSON.stringify({ pad: "x".repeat(4_000) });
    let total = 0;
    let markers = 0;
    try {
      // Raw PUBLISHes in pipelines of 200 (~800 KB) until the slow socket has been switched out (bounded).
      const t0 = Date.now();
      while (Date.now() - t0 < 20_000 && total < 40_000) {
        const p = r.pipeline();
        for (let i = 0; i < 200; i++) p.publish(`ev.${ch}`, payload);
        await p.exec();
        total += 200;
        if (total % 2_000 === 0 && (await metric(gw.url, "fanout_slow_consumer_switches_total")) >= 1 && total >= 6_000) break;
      }
      await fast.waitForMsgs(total, 30_000);
      (slow.ws as unknown as Sock)._socket.resume();
      // Once drained it rejoins live: a marker published now arrives.
      await waitFor(
        async () => {
          await r.publish(`ev.${ch}`, '{"marker":true}');
          markers++;
          return slow.msgs.some((m) => (m.data as { marker?: boolean }).marker === true);
        },
        { timeoutMs: 30_000, intervalMs: 200, what: "the slow client back in live delivery" },
      );
    } finally {
      r.disconnect();
    }
    expect(await metric(gw.url, "fanout_slow_consumer_switches_total")).toBeGreaterThanOrEqual(1);
    const dropped = (await metric(gw.url, "fanout_deliveries_dropped_total")) - droppedBefore;
    expect(dropped).toBeGreaterThan(0);
    await waitFor(() => slow.msgs.length + dropped >= total + markers || undefined, { what: "the markers in flight" });
    expect(slow.msgs.filter((m) => !(m.data as { marker?: boolean }).marker).length).toBeLessThan(total);
    // What it missed is exactly what was counted (only this socket was slow; markers sent while it was out count too).
    expect(slow.msgs.length + dropped).toBe(total + markers);
    expect(slow.open).toBe(true);
  }, 90_000);
});

describe("redis broker — Redis restarts", () => {
  it("redis — /readyz and publishes report Redis down, then subscriptions on both workers resume when it is back", async () => {
    const ch = uniq("rrs.");
    const subs = await Promise.all(Array.from({ length: 20 }, () => client()));
    await Promise.all(subs.map((c) => c.sub(ch)));
    const pub = await client();
    expect(await readyz(gw.url)).toBe(200);
    await redis.stop();
    await waitFor(async () => (await readyz(gw.url)) === 503 || undefined, { timeoutMs: 10_000, what: "readyz 503" });
    const body = await (await fetch(`${gw.url}/readyz`)).json();
    expect(body).toMatchObject({ ready: false, broker: { kind: "redis", connected: false } });
    expect((await httpPublish(gw.url, ch, { down: true })).status).toBe(503);
    expect(await pub.request({ op: "pub", channel: ch, data: {} })).toMatchObject({ op: "err", code: "broker_unavailable" });

    const dir = mkdtempSync(join(tmpdir(), "fgw-redis-restart-"));
    restarted = spawn(REDIS_SERVER_BIN, ["--port", String(redis.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir], {
      stdio: "ignore",
    });
    restarted.once("exit", () => rmSync(dir, { recursive: true, force: true }));
    // Both workers must be back (readyz is answered by either), so wait until a publish reaches everyone.
    await waitFor(async () => (await readyz(gw.url)) === 200 || undefined, { timeoutMs: 20_000, what: "readyz 200" });
    let i = 0;
    await waitFor(
      async () => {
        const r = await httpPublish(gw.url, ch, { i: i++ });
        return (r.status === 201 && subs.every((c) => c.msgs.length > 0)) || undefined;
      },
      { timeoutMs: 20_000, intervalMs: 100, what: "deliveries after the restart" },
    );
    expect(await metric(gw.url, "fanout_broker_reconnects_total")).toBeGreaterThanOrEqual(2);
    for (const c of subs) expect(c.open).toBe(true);
  });
});

describe("redis broker — embedded redis-server", () => {
  it("embedded redis — started without REDIS_URL, serves, restarted after a crash, stopped with the gateway on SIGTERM", async () => {
    const eg = await startGateway({ workers: 1, logLevel: "info", args: ["--broker", "redis"] });
    let stopped = false;
    try {
      const started = eg.logs.find((l) => l.msg === "embedded redis-server ready");
      expect(started).toBeDefined();
      const redisPid = started!.redisPid as number;
      expect(started!.url).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
      expect(alive(redisPid)).toBe(true);
      const c = await TestClient.connect(eg.wsUrl);
      try {
        await c.sub("emb.x");
        expect((await httpPublish(eg.url, "emb.x", { a: 1 })).status).toBe(201);
        await c.waitForMsgs(1);
        process.kill(redisPid, "SIGKILL");
        const again = await waitFor(() => eg.logs.filter((l) => l.msg === "embedded redis-server ready")[1], {
          timeoutMs: 15_000,
          what: "embedded redis restarted",
        });
        expect(again.url).toBe(started!.url);
        const newPid = again.redisPid as number;
        let i = 0;
        await waitFor(
          async () => {
            const r = await httpPublish(eg.url, "emb.x", { i: i++ });
            return (r.status === 201 && c.msgs.length > 1) || undefined;
          },
          { timeoutMs: 20_000, intervalMs: 100, what: "delivery after the embedded restart" },
        );
        expect(await readyz(eg.url)).toBe(200);
        expect(await eg.stop("SIGTERM")).toBe(0);
        stopped = true;
        await waitFor(() => !alive(newPid), { timeoutMs: 10_000, what: "embedded redis-server gone" });
      } finally {
        c.close();
      }
    } finally {
      if (!stopped) await eg.stop();
    }
  });

  it("embedded redis — a SIGKILLed primary does not leave it running", async () => {
    const eg = await startGateway({ workers: 1, logLevel: "info", args: ["--broker", "redis"] });
    const redisPid = eg.logs.find((l) => l.msg === "embedded redis-server ready")!.redisPid as number;
    expect(alive(redisPid)).toBe(true);
    eg.process.kill("SIGKILL");
    await eg.exited;
    await waitFor(() => !alive(redisPid), { timeoutMs: 15_000, what: "embedded redis-server gone after the primary's SIGKILL" });
  });
});
