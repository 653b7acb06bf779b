// What one reader can cost everyone, bounded: last-value snapshots and history answers come in pages of a
// bounded size with an exact cursor, reads over the per-IP rate get 429, and a catch-up stalled by a client
// that does not read ends with a temporary error within CATCHUP_DEADLINE instead of holding on forever.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import type { Frame, MsgFrame } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";
import { SseReader } from "#testkit/sse-client.js";
import { AUDIENCE, ISSUER, SECRET, sign } from "#testkit/auth.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
let limited: GatewayHandle;
let authed: GatewayHandle;
/** A stream keeping one message per channel (last values proper), with its own gateway. */
let lv1: GatewayHandle;
let nc: NatsConnection;
let js: JetStreamClient;
const clients = new ClientPool(() => gw.wsUrl);
const uniq = uniqueNames();
const MAX_BYTES = 65_536;
const DEADLINE_MS = 3_000;

/** Publishes straight into JetStream (pipelined); returns the seqs. */
async function put(subjects: string[], value: (i: number) => unknown): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < subjects.length; i += 200) {
    const acks = await Promise.all(subjects.slice(i, i + 200).map((s, k) => js.publish(`ev.${s}`, JSON.stringify(value(i + k)))));
    for (const a of acks) out.push(a.seq);
  }
  return out;
}

type Page = { messages: { seq: number; channel: string; data: { i: number } }[]; next?: number; upToSeq?: number; lastSeq: number };

/** GET and parse, keeping the body's size. */
async function get(url: string): Promise<{ status: number; bytes: number; body: Page; headers: Headers }> {
  const r = await fetch(url);
  const text = await r.text();
  return { status: r.status, bytes: Buffer.byteLength(text), body: JSON.parse(text) as Page, headers: r.headers };
}

beforeAll(async () => {
  nats = await startNatsServer();
  const bounds = {
    HISTORY_MAX_BYTES: String(MAX_BYTES),
    CATCHUP_DEADLINE: `${DEADLINE_MS}ms`,
    BACKPRESSURE_BYTES: "1536KiB",
    MAX_BACKPRESSURE_BYTES: "2MiB",
    READ_RATE_PER_IP: "-1",
    READ_RATE_PER_USER: "-1",
    HISTORY_CONCURRENCY_PER_IP: "-1",
  };
  const auth = { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE };
  [gw, limited, authed, lv1] = await Promise.all([
    startGateway({ natsUrl: nats.url, workers: 1, env: bounds }),
    startGateway({ natsUrl: nats.url, workers: 1, env: { READ_RATE_PER_IP: "1", READ_BURST_PER_IP: "3" } }),
    startGateway({
      natsUrl: nats.url,
      workers: 1,
      logLevel: "info",
      env: { ...auth, READ_RATE_PER_IP: "-1", READ_RATE_PER_USER: "1", READ_BURST_PER_USER: "2" },
    }),
    startGateway({
      natsUrl: nats.url,
      workers: 1,
      logLevel: "info",
      env: { STREAM_NAME: "LVONE", SUBJECT_PREFIX: "lv1", STREAM_MAX_MSGS_PER_SUBJECT: "1", READ_RATE_PER_IP: "-1" },
    }),
  ]);
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
});
afterAll(async () => {
  clients.closeAll();
  await nc?.close();
  await Promise.all([gw?.stop(), limited?.stop(), authed?.stop(), lv1?.stop()]);
  await nats?.stop();
});

describe("read bounds — last_per_subject paging", () => {
  it("last_per_subject — 1,100 channels (past multi_last's 1,024) over HTTP come in bounded pages with next: none lost, none twice", async () => {
    const p = uniq("lvp");
    const seqs = await put(
      Array.from({ length: 1_100 }, (_, i) => `${p}.c${i}`),
      (i) => ({ i }),
    );
    const [first7] = await put([`${p}.c7`], () => ({ i: 7_000 })); // c7's newest is now the last
    const url = `${gw.url}/v1/channels/${encodeURIComponent(`${p}.*`)}/messages?last_per_subject=1`;
    for (const limit of [undefined, 300]) {
      const first = await get(limit ? `${url}&limit=${limit}` : url);
      expect(first.status).toBe(200);
      expect(first.body.next).toBeGreaterThan(0);
      const seen = [...first.body.messages];
      let pages = 1;
      for (let next = first.body.next; next !== undefined; pages++) {
        const page = await get(`${url}&up_to_seq=${first.body.upToSeq}&from_seq=${next}${limit ? `&limit=${limit}` : ""}`);
        expect(page.bytes).toBeLessThanOrEqual(MAX_BYTES);
        if (limit) expect(page.body.messages.length).toBeLessThanOrEqual(limit);
        seen.push(...page.body.messages);
        next = page.body.next;
      }
      expect(first.bytes).toBeLessThanOrEqual(MAX_BYTES);
      expect(pages).toBeGreaterThanOrEqual(limit ? 4 : 2);
      expect(seen.map((m) => m.channel).sort()).toEqual(Array.from({ length: 1_100 }, (_, i) => `${p}.c${i}`).sort());
      const seqs = seen.map((m) => m.seq);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      expect(seen.at(-1)).toMatchObject({ channel: `${p}.c7`, data: { i: 7_000 } });
    }
    // A walk that starts in the middle (its scan lacks the channels before it) must not serve an earlier
    // cursor. As of the seq before c7's second message, channel i's newest is its first message, seqs[i].
    const upTo = first7! - 1;
    const walk = async (from: number) => {
      const got: string[] = [];
      for (let next: number | undefined = from; next !== undefined;) {
        const page = await get(`${url}&up_to_seq=${upTo}&from_seq=${next}`);
        got.push(...page.body.messages.map((m) => m.channel));
        next = page.body.next;
      }
      return got;
    };
    expect(await walk(seqs[400]!)).toHaveLength(700);
    expect(new Set(await walk(seqs[1]!)).size).toBe(1_099);
  });

  it("last_per_subject — 1,100 channels of 16 KB over WebSocket arrive in bounded chunks: every last value once, then live, under a 2 MiB socket cap", async () => {
    const p = uniq("lvw");
    const pad = "w".repeat(16_000);
    await put(
      Array.from({ length: 1_100 }, (_, i) => `${p}.c${i}`),
      (i) => ({ i, pad }),
    );
    const c = await clients.open();
    const ok = await c.sub(`${p}.*`, { from: "last_per_subject" });
    await waitFor(() => c.frames.find((f) => f.op === "live" && f.sub === `${p}.*`) ?? c.frames.find((f) => f.op === "err"), {
      timeoutMs: 30_000,
      what: "live frame",
    });
    expect(c.frames.filter((f) => f.op === "err")).toEqual([]);
    expect(c.msgs.map((m) => (m.data as { i: number }).i)).toEqual([...Array(1_100).keys()]);
    expect(c.msgs.at(-1)!.seq).toBeLessThanOrEqual(ok.lastSeq as number);
  });
});

describe("read bounds — last_per_subject while retention moves", () => {
  it("last_per_subject — channels whose snapshot message retention removed between pages are left out, and a page they emptied still continues", async () => {
    const p = uniq("lvret");
    const channels = Array.from({ length: 1_100 }, (_, i) => `${p}.c${i}`);
    for (let i = 0; i < channels.length; i += 200)
      await Promise.all(channels.slice(i, i + 200).map((c, k) => js.publish(`lv1.${c}`, JSON.stringify({ i: i + k }))));
    const url = `${lv1.url}/v1/channels/${encodeURIComponent(`${p}.*`)}/messages?last_per_subject=1&limit=300`;
    const first = await get(url);
    expect(first.body.messages.map((m) => m.channel)).toEqual(channels.slice(0, 300));
    // c300..c599 (the whole next page) get new messages after up_to_seq: one per channel is kept, so their
    // snapshot messages are gone.
    await Promise.all(channels.slice(300, 600).map((c) => js.publish(`lv1.${c}`, JSON.stringify({ i: -1 }))));
    const rest: string[] = [];
    let pages = 0;
    for (let next = first.body.next; next !== undefined; pages++) {
      expect(pages).toBeLessThan(20);
      const page = await get(`${url}&up_to_seq=${first.body.upToSeq}&from_seq=${next}`);
      rest.push(...page.body.messages.map((m) => m.channel));
      next = page.body.next;
    }
    expect(rest).toEqual(channels.slice(600));
  });
});

describe("read bounds — history answers", () => {
  it("history — a large answer is capped at HISTORY_MAX_BYTES with next; following next gives every message once", async () => {
    const ch = uniq("hist");
    const pad = "h".repeat(2_000);
    const seqs = await put(
      Array.from({ length: 300 }, () => ch),
      (i) => ({ i, pad }),
    );
    const url = `${gw.url}/v1/channels/${encodeURIComponent(ch)}/messages`;
    const got: number[] = [];
    let pages = 0;
    for (let from: number | undefined = seqs[0]; from !== undefined; pages++) {
      const r = await get(`${url}?from_seq=${from}&limit=${Math.max(1, 300 - got.length)}`);
      expect(r.status).toBe(200);
      expect(r.bytes).toBeLessThanOrEqual(MAX_BYTES);
      got.push(...r.body.messages.map((m) => m.data.i));
      from = r.body.next;
      expect(pages).toBeLessThan(100);
    }
    expect(got).toEqual([...Array(300).keys()]);
    expect(pages).toBeGreaterThanOrEqual(600_000 / MAX_BYTES);
    // last=N is capped the same way; its next continues it.
    const last = await get(`${url}?last=200`);
    expect(last.bytes).toBeLessThanOrEqual(MAX_BYTES);
    expect(last.body.messages[0]!.data.i).toBe(100);
    expect(last.body.next).toBe(last.body.messages.at(-1)!.seq + 1);
  });
});

describe("read bounds — per-IP read rate", () => {
  it("reads — history over READ_RATE_PER_IP gets 429 rate_limited with Retry-After; so does an SSE open from that IP", async () => {
    const ch = uniq("rate");
    await put([ch], () => ({ i: 1 }));
    const url = `${limited.url}/v1/channels/${encodeURIComponent(ch)}/messages`;
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await fetch(url));
    expect(answers.slice(0, 3).map((r) => r.status)).toEqual([200, 200, 200]);
    const refused = answers[3]!;
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await refused.json()).toMatchObject({ error: "rate_limited", temporary: true });
    const sse = await fetch(`${limited.url}/v1/channels/${encodeURIComponent(ch)}/events`);
    expect(sse.status).toBe(429);
    expect(sse.headers.get("retry-after")).not.toBeNull();
    expect(await sse.json()).toMatchObject({ error: "rate_limited", temporary: true });
    const metrics = await (await fetch(limited.metricsUrl + "/metrics")).text();
    expect(metrics).toMatch(/fanout_reads_refused_total\{reason="ip_rate"\} 2/);
    // The bucket refills: a read a second later goes through.
    await waitFor(async () => (await fetch(url)).status === 200, { timeoutMs: 5_000, intervalMs: 250, what: "a read after the refill" });
  });
});

describe("read bounds — per-user read rate", () => {
  it("reads — a JWT user over READ_RATE_PER_USER gets 429 whatever the IP allows; another user from the same IP reads on", async () => {
    const ch = uniq("user");
    await put([ch], () => ({ i: 1 }));
    const url = `${authed.url}/v1/channels/${encodeURIComponent(ch)}/messages`;
    const as = async (sub: string) => ({ authorization: `Bearer ${await sign({ channels: { sub: [">"] } }, { sub })}` });
    const alice = await as("alice");
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await fetch(url, { headers: alice })).status);
    expect(statuses).toEqual([200, 200, 429]);
    expect((await fetch(url, { headers: await as("bob") })).status).toBe(200);
    const refused = await fetch(url, { headers: alice });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ error: "rate_limited", message: expect.stringMatching(/user/) as unknown });
  });
});

describe("read bounds — a catch-up stalled by a client that does not read", () => {
  it("catch-up — ends with a temporary slow_consumer error within CATCHUP_DEADLINE; a resume from the last seq gets everything once", async () => {
    const ch = uniq("stall");
    const pad = "s".repeat(32_000);
    const seqs = await put(
      Array.from({ length: 400 }, () => ch),
      (i) => ({ i, pad }),
    );
    const ws = new WebSocket(gw.wsUrl);
    const frames: Frame[] = [];
    const msgs: MsgFrame[] = [];
    ws.on("message", (d: Buffer) => {
      const f = JSON.parse(d.toString()) as Frame;
      if (f.op === "msg") msgs.push(f as MsgFrame);
      else frames.push(f);
    });
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    try {
      const logsBefore = gw.logs.length;
      const startedAt = Date.now();
      ws.send(JSON.stringify({ op: "sub", id: "s1", channel: ch, from: { seq: seqs[0] } }));
      ws.pause(); // reads nothing: the kernel buffers fill, then the gateway's
      await waitFor(() => gw.logs.slice(logsBefore).find((l) => l.msg === "catch-up ended: slow reader"), {
        timeoutMs: DEADLINE_MS + 10_000,
        what: "the catch-up to end",
      });
      expect(Date.now() - startedAt).toBeLessThan(DEADLINE_MS + 5_000);
      ws.resume();
      const err = await waitFor(() => frames.find((f) => f.op === "err"), { timeoutMs: 15_000, what: "err frame" });
      expect(err).toMatchObject({ code: "slow_consumer", temporary: true });
      const resumeAt = Number(/from:\{seq:(\d+)\}/.exec(String(err.message))?.[1]);
      expect(msgs.length).toBeGreaterThan(0);
      expect(msgs.length).toBeLessThan(400);
      expect(resumeAt).toBe(msgs.at(-1)!.seq + 1);
      // Resume where it said, reading this time (on a loaded machine a resume may itself run out of time:
      // it then says where to go on again, and nothing is lost either way).
      let resumeFrom = resumeAt;
      for (let attempt = 2; ; attempt++) {
        expect(attempt).toBeLessThan(8);
        const errs = frames.filter((f) => f.op === "err").length;
        ws.send(JSON.stringify({ op: "sub", id: `s${attempt}`, channel: ch, from: { seq: resumeFrom } }));
        const end = await waitFor(
          () => frames.find((f) => f.op === "live" && f.sub === ch) ?? (frames.filter((f) => f.op === "err").length > errs ? frames.at(-1) : undefined),
          { timeoutMs: 30_000, what: "live (or another slow_consumer) after the resume" },
        );
        if (end.op === "live") break;
        expect(end).toMatchObject({ code: "slow_consumer", temporary: true });
        resumeFrom = Number(/from:\{seq:(\d+)\}/.exec(String(end.message))?.[1]);
        expect(resumeFrom).toBe(msgs.at(-1)!.seq + 1);
      }
      expect(msgs.map((m) => m.seq)).toEqual(seqs);
    } finally {
      ws.close();
    }
  });

  it("catch-up — over SSE too: a reader that stops reading gets an err event slow_consumer and the stream ends; Last-Event-ID resumes with nothing lost", async () => {
    const ch = uniq("ssestall");
    const pad = "e".repeat(32_000);
    const seqs = await put(
      Array.from({ length: 400 }, () => ch),
      (i) => ({ i, pad }),
    );
    const logsBefore = gw.logs.length;
    const url = `${gw.url}/v1/channels/${encodeURIComponent(ch)}/events`;
    const first = await SseReader.open(`${url}?from_seq=${seqs[0]}`);
    first.pause();
    await waitFor(() => gw.logs.slice(logsBefore).find((l) => l.msg === "catch-up ended: slow reader"), {
      timeoutMs: DEADLINE_MS + 10_000,
      what: "the SSE catch-up to end",
    });
    first.resume();
    await waitFor(() => first.ended || undefined, { timeoutMs: 15_000, what: "the stream to end" });
    const err = first.events.at(-1)!;
    expect(err.event).toBe("err");
    expect(JSON.parse(err.data)).toMatchObject({ code: "slow_consumer", temporary: true });
    expect(first.seqs.length).toBeLessThan(400);
    expect(first.seqs).toEqual(seqs.slice(0, first.seqs.length));
    const got = [...first.seqs];
    let lastEventId = first.lastEventId;
    for (let attempt = 0; got.length < seqs.length; attempt++) {
      expect(attempt).toBeLessThan(6);
      const next = await SseReader.open(url, { "last-event-id": lastEventId });
      await waitFor(() => next.ended || got.length + next.seqs.length >= seqs.length || undefined, { timeoutMs: 30_000, what: "the rest" });
      got.push(...next.seqs);
      lastEventId = next.lastEventId;
      next.close();
    }
    expect(got).toEqual(seqs);
  });
});
