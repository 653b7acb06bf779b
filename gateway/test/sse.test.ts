// Server-Sent Events against real servers: a real nats-server, the real CLI with two workers, and a
// curl-like reader over node:http (gateway/testkit/sse-client.ts).
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { childPids, startGateway, waitForNewEpoch, type GatewayHandle } from "#testkit/gateway.js";
import { connectionInodes, pidsHoldingInodes } from "#testkit/proc-sockets.js";
import { httpPublish } from "#testkit/ws-client.js";
import { SseReader } from "#testkit/sse-client.js";
import { waitFor } from "#testkit/wait.js";
import { AUDIENCE, ISSUER, SECRET, sign, tryConnect } from "#testkit/auth.js";
import { metric } from "#testkit/metrics.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
let nc: NatsConnection;
let jsm: JetStreamManager;
const readers: SseReader[] = [];
let n = 0;
const uniq = (base: string) => `${base}${++n}x${Date.now() % 100_000}`;

async function open(path: string, headers: Record<string, string> = {}, base = gw.url): Promise<SseReader> {
  const r = await SseReader.open(`${base}${path}`, headers);
  readers.push(r);
  return r;
}

const events = (channel: string, query = "") => `/v1/channels/${encodeURIComponent(channel)}/events${query ? `?${query}` : ""}`;

async function publish(channel: string, data: unknown, base = gw.url, headers: Record<string, string> = {}): Promise<number> {
  const r = await httpPublish(base, channel, data, headers);
  expect(r.status).toBe(201);
  return r.body.seq as number;
}

async function publishMany(channel: string, count: number, from = 0): Promise<number[]> {
  const seqs: number[] = [];
  for (let i = from; i < from + count; i++) seqs.push(await publish(channel, { i }));
  return seqs;
}

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({
    natsUrl: nats.url,
    workers: 2,
    logLevel: "info",
    args: ["--sse-heartbeat", "300ms", "--sse-retry", "250ms", "--backpressure-bytes", "16KiB", "--slow-consumer-timeout", "60s"],
  });
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  for (const r of readers) r.close();
  await nc?.close();
  await gw?.stop();
  await nats?.stop();
});

describe("sse — start positions", () => {
  it("sse — from_seq, last and since replay stored messages, then deliver live; ids are <epoch>:<seq>", async () => {
    const ch = uniq("start.");
    const stored = await publishMany(ch, 5);
    const epoch = (await jsm.streams.info("FANOUT_CHANNELS")).created;

    const fromSeq = await open(events(ch, `from_seq=${stored[2]}`));
    expect(fromSeq.status).toBe(200);
    expect(fromSeq.headers["content-type"]).toBe("text/event-stream");
    expect(fromSeq.headers["cache-control"]).toBe("no-cache");
    const last = await open(events(ch, "last=2"));
    const before = new Date(Date.now() - 60_000).toISOString();
    const since = await open(events(ch, `since=${encodeURIComponent(before)}`));
    const future = await open(events(ch, `since=${encodeURIComponent(new Date(Date.now() + 3_600_000).toISOString())}`));
    const live = await open(events(ch));

    expect(await fromSeq.waitForSeqs(3)).toEqual(stored.slice(2));
    expect(await last.waitForSeqs(2)).toEqual(stored.slice(3));
    expect(await since.waitForSeqs(5)).toEqual(stored);
    const more = await publishMany(ch, 2, 5);
    expect(await fromSeq.waitForSeqs(5)).toEqual([...stored.slice(2), ...more]);
    expect(await last.waitForSeqs(4)).toEqual([...stored.slice(3), ...more]);
    expect(await since.waitForSeqs(7)).toEqual([...stored, ...more]);
    expect(await future.waitForSeqs(2)).toEqual(more);
    expect(await live.waitForSeqs(2)).toEqual(more);

    const ev = fromSeq.events.find((e) => e.event === "message")!;
    expect(ev.id).toBe(`${epoch}:${stored[2]}`);
    expect(JSON.parse(ev.data)).toMatchObject({ op: "msg", channel: ch, sub: ch, seq: stored[2], data: { i: 2 } });
    expect(fromSeq.events[0]).toEqual({ event: "retry", data: "", retry: 250 });
  });

  it("sse — a wildcard pattern streams every matching channel in seq order", async () => {
    const base = uniq("wild.");
    const r = await open(events(`${base}.>`));
    const other = await open(events(`${base}.*.b`));
    const seqs = [await publish(`${base}.a`, { k: 1 }), await publish(`${base}.x.b`, { k: 2 }), await publish(`${base}.c`, { k: 3 })];
    await publish(`${uniq("elsewhere.")}`, { k: 0 });
    expect(await r.waitForSeqs(3)).toEqual(seqs);
    expect(r.messages.map((m) => m.channel)).toEqual([`${base}.a`, `${base}.x.b`, `${base}.c`]);
    expect(await other.waitForSeqs(1)).toEqual([seqs[1]]);
  });
});

describe("sse — resume", () => {
  it("sse — Last-Event-ID resumes across reconnects to both workers: every seq once, in order, while publishing", async () => {
    const ch = uniq("resume.");
    const total = 120;
    const published: number[] = [];
    const publishing = (async () => {
      for (let i = 0; i < total; i++) published.push(await publish(ch, { i }));
    })();
    const got: number[] = [];
    let lastId = "";
    let rounds = 0;
    const servedBy = new Set<number>();
    const workers = await childPids(gw.process.pid!);
    while (got.length < total) {
      const r = await open(events(ch, rounds === 0 ? "from_seq=1" : ""), lastId ? { "last-event-id": lastId } : {});
      expect(r.status).toBe(200);
      rounds++;
      for (const pid of pidsHoldingInodes(workers, connectionInodes(gw.port, r.localPort))) servedBy.add(pid);
      // Read a few events (or what there is), then drop the connection like a flaky network would.
      const want = Math.min(got.length + 7 + (rounds % 5), total);
      await waitFor(() => got.length + r.seqs.length >= want || undefined, { timeoutMs: 20_000, what: `round ${rounds}` });
      r.close();
      got.push(...r.seqs);
      lastId = r.lastEventId || lastId;
    }
    await publishing;
    expect(got).toEqual(published);
    expect(new Set(got).size).toBe(got.length);
    expect(rounds).toBeGreaterThan(5);
    expect(servedBy.size, "streams served by both workers").toBe(2);
  });

  it("sse — an id of a seq retention removed gets a gap event (truncated), then the first stored message", async () => {
    const ch = uniq("trunc.");
    const seqs = await publishMany(ch, 3);
    const epoch = (await jsm.streams.info("FANOUT_CHANNELS")).created;
    // Retention at work: everything before the second message is gone from the stream.
    await jsm.streams.purge("FANOUT_CHANNELS", { seq: seqs[1]! });
    expect((await jsm.streams.info("FANOUT_CHANNELS")).state.first_seq).toBe(seqs[1]);
    const r = await open(events(ch), { "last-event-id": `${epoch}:${seqs[0]! - 1}` });
    expect(await r.waitForSeqs(2)).toEqual(seqs.slice(1));
    const gap = r.events.find((e) => e.event === "gap")!;
    expect(JSON.parse(gap.data)).toMatchObject({ truncated: true, after: seqs[0]! - 1, firstSeq: seqs[1], epoch });
    expect(gap.id).toBe(`${epoch}:${seqs[1]! - 1}`);
    expect(r.events.findIndex((e) => e.event === "gap")).toBeLessThan(r.events.findIndex((e) => e.event === "message"));
  });
});

describe("sse — errors, limits and upkeep", () => {
  it("sse — bad parameters and channels get 400 with a JSON error", async () => {
    const cases: [string, Record<string, string>, string][] = [
      [events("a.b", "from_seq=0"), {}, "bad_request"],
      [events("a.b", "from_seq=x"), {}, "bad_request"],
      [events("a.b", "last=0"), {}, "bad_request"],
      [events("a.b", "since=yesterday"), {}, "bad_request"],
      [events("a.b", "from_seq=1&last=2"), {}, "bad_request"],
      [events("a.b", "last_event_id=e:x"), {}, "bad_request"],
      [events("a.b"), { "last-event-id": "nonsense" }, "bad_request"],
      [events("a..b"), {}, "bad_channel"],
      [events("a.>.b"), {}, "bad_channel"],
      ["/v1/channels/%E0%A4%A/events", {}, "bad_channel"],
    ];
    for (const [path, headers, code] of cases) {
      const r = await open(path, headers);
      expect(r.status, path).toBe(400);
      expect(r.headers["content-type"]).toBe("application/json");
      expect(r.json, path).toMatchObject({ error: code, temporary: false });
      expect(typeof r.json.message).toBe("string");
    }
  });

  it("sse — idle streams get heartbeat comments; streams are counted in fanout_sse_connections", async () => {
    const r = await open(events(uniq("hb.")));
    await waitFor(() => r.comments.filter((c) => c === "hb").length >= 2 || undefined, { what: "two heartbeats" });
    expect(r.comments[0]).toBe("ok");
    await waitFor(async () => (await metric(gw.metricsUrl, "fanout_sse_connections")) >= 1 || undefined, { what: "gauge" });
    // The live page's /v1/stats shows them too (apart from WebSocket connections).
    const stats = await waitFor(
      async () => {
        const b = (await (await fetch(`${gw.metricsUrl}/v1/stats`)).json()) as { sseStreams?: number };
        return (b.sseStreams ?? 0) >= 1 ? b : undefined;
      },
      { what: "sseStreams in /v1/stats" },
    );
    expect(stats.sseStreams).toBeGreaterThanOrEqual(1);
  });

  it("sse — a reader that stops reading leaves live delivery, then gets every message in order once it reads again", async () => {
    const ch = uniq("slow.");
    const r = await open(events(ch));
    await waitFor(() => r.comments.includes("ok") || undefined, { what: "stream open" });
    r.pause();
    const switches = await metric(gw.metricsUrl, "fanout_slow_consumer_switches_total");
    const big = "x".repeat(8_000);
    const seqs: number[] = [];
    // Far more than the kernel's socket buffers and BACKPRESSURE_BYTES (16 KiB) hold.
    for (let i = 0; i < 60; i++) {
      const batch = await Promise.all(Array.from({ length: 10 }, (_, j) => publish(ch, { i: i * 10 + j, big })));
      seqs.push(...batch);
      if ((await metric(gw.metricsUrl, "fanout_slow_consumer_switches_total")) > switches && i > 20) break;
    }
    await waitFor(async () => (await metric(gw.metricsUrl, "fanout_slow_consumer_switches_total")) > switches || undefined, {
      what: "the stream paused",
      timeoutMs: 20_000,
    });
    r.resume();
    const got = await r.waitForSeqs(seqs.length, 60_000);
    expect(got).toEqual([...seqs].sort((a, b) => a - b));
  }, 90_000);
});

describe("sse — authentication", () => {
  let agw: GatewayHandle;
  beforeAll(async () => {
    agw = await startGateway({
      natsUrl: nats.url,
      workers: 1,
      logLevel: "info",
      env: { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, API_KEYS: "backend-key-0123456789", JWT_CLOCK_TOLERANCE: "0s" },
    });
  });
  afterAll(async () => {
    await agw?.stop();
  });

  it("sse — no token is 401, a token without the sub right is 403, ?token= and Bearer with the right stream", async () => {
    const ch = uniq("auth.");
    const path = events(`${ch}.*`);
    const none = await open(path, {}, agw.url);
    expect(none.status).toBe(401);
    expect(none.json).toMatchObject({ error: "unauthorized" });
    const narrow = await sign({ channels: { sub: [`${ch}.only`] } });
    const forbidden = await open(`${path}?token=${narrow}`, {}, agw.url);
    expect(forbidden.status).toBe(403);
    expect(forbidden.json).toMatchObject({ error: "forbidden" });
    const good = await sign({ channels: { sub: [`${ch}.>`] } });
    const viaQuery = await open(`${path}?token=${good}`, {}, agw.url);
    const viaHeader = await open(path, { authorization: `Bearer ${good}` }, agw.url);
    expect([viaQuery.status, viaHeader.status]).toEqual([200, 200]);
    const seq = await publish(`${ch}.a`, { ok: true }, agw.url, { "x-api-key": "backend-key-0123456789" });
    expect(await viaQuery.waitForSeqs(1)).toEqual([seq]);
    expect(await viaHeader.waitForSeqs(1)).toEqual([seq]);
  });

  it("sse — a stream ends at its token's expiry with an err event (unauthorized)", async () => {
    const ch = uniq("exp.");
    const short = await sign({ channels: { sub: [ch] } }, { exp: Math.floor(Date.now() / 1000) + 2 });
    const r = await open(`${events(ch)}?token=${short}`, {}, agw.url);
    expect(r.status).toBe(200);
    await waitFor(() => r.complete || undefined, { what: "the stream's end at expiry", timeoutMs: 15_000 });
    const err = r.events.find((e) => e.event === "err");
    expect(JSON.parse(err!.data)).toMatchObject({ code: "unauthorized", temporary: false });
  });
});

describe("sse — the stream deleted and created again", () => {
  it("sse — open streams end; a Last-Event-ID of the old epoch gets a gap event (epochChanged), then the new stream's messages", async () => {
    const ch = uniq("epoch.");
    const r = await open(events(ch));
    const seqs = await publishMany(ch, 2);
    await r.waitForSeqs(2);
    const old = await jsm.streams.info("FANOUT_CHANNELS");
    expect(r.lastEventId).toBe(`${old.created}:${seqs[1]}`);
    const from = gw.logs.length;
    await jsm.streams.delete("FANOUT_CHANNELS");
    await jsm.streams.add(old.config);
    await waitFor(() => r.ended || undefined, { what: "the stream's end", timeoutMs: 20_000 });
    expect(r.complete).toBe(true);
    // Both workers have seen the new epoch (each ends its streams when it does).
    await waitForNewEpoch(gw, "FANOUT_CHANNELS", from);
    const created = (await jsm.streams.info("FANOUT_CHANNELS")).created;
    const fresh = await publishMany(ch, 2, 2);
    const again = await open(events(ch), { "last-event-id": r.lastEventId });
    await waitFor(() => again.events.find((e) => e.event === "gap"), { what: "gap event" });
    const gap = again.events.find((e) => e.event === "gap")!;
    expect(JSON.parse(gap.data)).toMatchObject({ truncated: true, epochChanged: true, epoch: created, was: old.created });
    expect(gap.id).toBe(`${created}:0`);
    expect(await again.waitForSeqs(2)).toEqual(fresh);
    expect(again.messages.map((m) => (m.data as { i: number }).i)).toEqual([2, 3]);
  }, 60_000);
});

describe("sse — connection limit and drain", () => {
  it("sse — streams count against MAX_CONNECTIONS (WebSockets too); SIGTERM ends open streams cleanly", async () => {
    const lgw = await startGateway({ natsUrl: nats.url, workers: 1, logLevel: "info", args: ["--max-connections", "1"] });
    try {
      const first = await open(events(uniq("limit.")), {}, lgw.url);
      expect(first.status).toBe(200);
      const second = await open(events(uniq("limit.")), {}, lgw.url);
      expect(second.status).toBe(503);
      expect(second.json).toMatchObject({ temporary: true });
      expect(second.headers["retry-after"]).toBe("1");
      const ws = await tryConnect(`ws://127.0.0.1:${lgw.port}/ws`);
      expect("status" in ws && ws.status).toBe(503);
      first.close();
      // The slot is free again once the stream's end reached the worker.
      const third = await waitFor(
        async () => {
          const r = await open(events(uniq("limit.")), {}, lgw.url);
          return r.status === 200 ? r : (r.close(), undefined);
        },
        { what: "a stream after the first closed" },
      );
      await waitFor(() => third.comments.includes("ok") || undefined, { what: "third open" });
      await lgw.stop("SIGTERM");
      await waitFor(() => third.ended || undefined, { what: "the stream ended by the drain" });
      expect(third.complete).toBe(true);
    } finally {
      await lgw.stop();
    }
  }, 60_000);
});
