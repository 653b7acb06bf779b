import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { childPids, startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish, TestClient, type MsgFrame } from "#testkit/ws-client.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";
import { contiguousFrom, publishMany as fill } from "#testkit/stream-fill.js";

const publishMany = (channel: string, count: number, from = 0): Promise<number[]> => fill(js, channel, count, from);
import { metric, type Labels } from "#testkit/metrics.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
let nc: NatsConnection;
let js: JetStreamClient;
const clients = new ClientPool(() => gw.wsUrl);
const client = () => clients.open();
const uniq = uniqueNames();

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 2, args: ["--restart-backoff", "100ms"] });
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
});
afterAll(async () => {
  clients.closeAll();
  await nc?.close();
  await gw?.stop();
  await nats?.stop();
});

describe("replay — start positions", () => {
  it("from seq, last N, all and time; then live, with an ok that reports the stream bounds", async () => {
    const ch = uniq("pos.");
    const seqs = await publishMany(ch, 50);
    const t = new Date(Date.now() + 1).toISOString();
    await waitFor(() => Date.now() > Date.parse(t) + 2 || undefined, { intervalMs: 2 });
    const later = await publishMany(ch, 10, 50);

    const a = await client();
    const okA = await a.sub(ch, { from: { seq: seqs[20] } });
    expect(okA).toMatchObject({ op: "ok", lastSeq: later[9] });
    expect(okA.truncated).toBeUndefined();
    await a.waitForMsgs(40);
    expect(contiguousFrom(a.msgs, 20)).toBe(true);

    const b = await client();
    await b.sub(ch, { from: { last: 5 } });
    await b.waitForMsgs(5);
    expect(b.msgs.map((m) => (m.data as { i: number }).i)).toEqual([55, 56, 57, 58, 59]);

    const c = await client();
    await c.sub(ch, { from: "all" });
    await c.waitForMsgs(60);
    expect(contiguousFrom(c.msgs, 0)).toBe(true);

    const d = await client();
    await d.sub(ch, { from: { time: t } });
    await d.waitForMsgs(10);
    expect(contiguousFrom(d.msgs, 50)).toBe(true);

    // All four are live now: one more message reaches each exactly once.
    for (const x of [a, b, c, d]) await waitFor(() => x.frames.find((f) => f.op === "live"), { what: "live marker" });
    await httpPublish(gw.url, ch, { i: 60 });
    for (const [x, len] of [
      [a, 41],
      [b, 6],
      [c, 61],
      [d, 11],
    ] as const) {
      await x.waitForMsgs(len);
      expect((x.msgs.at(-1)!.data as { i: number }).i).toBe(60);
      expect(new Set(x.msgs.map((m) => m.seq)).size).toBe(x.msgs.length);
    }
  });

  it("a start position beyond the end waits for new messages and skips nothing", async () => {
    const ch = uniq("future.");
    const seqs = await publishMany(ch, 3);
    const c = await client();
    await c.sub(ch, { from: { seq: seqs[2]! + 1 } });
    await httpPublish(gw.url, ch, { i: 3 });
    await c.waitForMsgs(1);
    expect(c.msgs.map((m) => (m.data as { i: number }).i)).toEqual([3]);
  });

  it("a storm: 300 sockets resume one channel at once from nearby positions; each gets every message once, in order; pages are shared", async () => {
    const ch = uniq("storm.");
    const seqs = await publishMany(ch, 2_000);
    const cs = await Promise.all(Array.from({ length: 300 }, () => client()));
    const starts = cs.map((_, k) => 1_000 + (k % 50));
    await Promise.all(cs.map((c, k) => c.sub(ch, { from: { seq: seqs[starts[k]!]! } })));
    const after = await publishMany(ch, 100, 2_000);
    await Promise.all(cs.map((c, k) => c.waitForMsgs(2_100 - starts[k]!, 30_000)));
    for (const [k, c] of cs.entries()) {
      expect(c.msgs.length).toBe(2_100 - starts[k]!);
      expect(contiguousFrom(c.msgs, starts[k]!)).toBe(true);
    }
    expect(cs[0]!.msgs.at(-1)!.seq).toBe(after.at(-1));
    const jsm = await jetstreamManager(nc);
    expect((await jsm.streams.info("FANOUT_CHANNELS")).state.consumer_count).toBe(0);
    for (const c of cs) c.close();
  }, 60_000);

  it("retention: resuming from a removed sequence is reported as truncated with the first seq", async () => {
    const ch = uniq("trunc.");
    await publishMany(ch, 20);
    const jsm = await jetstreamManager(nc);
    await jsm.streams.purge("FANOUT_CHANNELS", { keep: 5 });
    const info = await jsm.streams.info("FANOUT_CHANNELS");
    const c = await client();
    const ok = await c.sub(ch, { from: { seq: 1 } });
    expect(ok).toMatchObject({ truncated: true, firstSeq: info.state.first_seq });
    await c.waitForMsgs(5);
    expect(c.msgs.map((m) => (m.data as { i: number }).i)).toEqual([15, 16, 17, 18, 19]);
  });

  it("epoch: ok carries the stream's epoch; a position of a deleted and recreated stream is reported, never taken as a seq of the new one", async () => {
    const ch = uniq("epoch.");
    await publishMany(ch, 3);
    const a = await client();
    const ok = await a.sub(ch, { from: "all" });
    const jsm = await jetstreamManager(nc);
    const epoch = (await jsm.streams.info("FANOUT_CHANNELS")).created;
    expect(ok.epoch).toBe(epoch);
    // Same epoch: an ordinary resume.
    const b = await client();
    const okB = await b.sub(ch, { from: { seq: 1, epoch } });
    expect(okB.epochChanged).toBeUndefined();
    // Another epoch (the stream was recreated since the client saw it): truncated, epochChanged, new epoch.
    const c = await client();
    const okC = await c.sub(ch, { from: { seq: 999_999_999, epoch: "2001-01-01T00:00:00Z" } });
    expect(okC).toMatchObject({ truncated: true, epochChanged: true, epoch });
    await c.waitForMsgs(3);
    expect(c.msgs.map((m) => (m.data as { i: number }).i)).toEqual([0, 1, 2]);
  });
});

describe("replay — resume after a worker is killed", () => {
  it("kill -9 the worker holding a client mid-stream; the client resumes from last+1 and gets every message once", async () => {
    const ch = uniq("resume.");
    const c = await client();
    await c.sub(ch);
    let i = 0;
    let stop = false;
    const publisher = (async () => {
      for (; i < 3_000 && !stop; i++) {
        // The request may land on the dying worker: retry it (the Idempotency-Key keeps it stored once).
        const r = await httpPublish(gw.url, ch, { i }, { "idempotency-key": `${ch}-${i}` }).catch(() => undefined);
        if (r?.status !== 201) i--;
      }
    })();
    await c.waitForMsgs(200);
    // Which worker holds it? Kill each until this client's socket drops (SO_REUSEPORT picked one).
    const pids = await childPids(gw.process.pid!);
    for (const pid of pids) {
      process.kill(pid, "SIGKILL");
      const dropped = await waitFor(() => (c.open ? undefined : true), { timeoutMs: 3_000, what: "socket drop" }).catch(() => false);
      if (dropped) break;
    }
    expect(c.open).toBe(false);
    const last = c.msgs.at(-1)!.seq;
    const r = await waitFor(async () => TestClient.connect(gw.wsUrl).catch(() => undefined), { what: "reconnect", timeoutMs: 15_000 });
    clients.track(r);
    await r.sub(ch, { from: { seq: last + 1 } });
    await publisher;
    stop = true;
    const all = [...c.msgs, ...(await r.waitForMsgs(3_000 - c.msgs.length, 60_000))];
    expect(all.length).toBe(3_000);
    expect(contiguousFrom(all, 0)).toBe(true);
    expect(new Set(all.map((m) => m.seq)).size).toBe(3_000);
  }, 90_000);
});

describe("payloads written by other NATS clients", () => {
  it("a payload shaped like JSON but not JSON, and one that is not UTF-8, arrive as text and base64 (live, replay and history); timestamps agree to the µs", async () => {
    const ch = uniq("raw.");
    const live = await client();
    await live.sub(ch);
    const payloads = [Buffer.from('{"ok":1}'), Buffer.from("{not json}"), Buffer.from([0x7b, 0xc3, 0x28, 0x7d]), Buffer.from("plain")];
    for (const p of payloads) await js.publish(`ev.${ch}`, p);
    const replay = await client();
    await replay.sub(ch, { from: "all" });
    const decode = (m: MsgFrame & { enc?: string }) =>
      m.enc === "base64" ? Buffer.from(String(m.data), "base64") : m.enc === "text" ? Buffer.from(String(m.data)) : Buffer.from(JSON.stringify(m.data));
    for (const c of [live, replay]) {
      const got = await c.waitForMsgs(4);
      expect(got.map((m) => (m as { enc?: string }).enc)).toEqual([undefined, "text", "base64", "text"]);
      got.forEach((m, i) => expect(decode(m).equals(payloads[i]!)).toBe(true));
    }
    const h = (await (await fetch(`${gw.url}/v1/channels/${ch}/messages?from_seq=1`)).json()) as { messages: (MsgFrame & { enc?: string })[] };
    expect(h.messages.map((m) => m.enc)).toEqual([undefined, "text", "base64", "text"]);
    // History carries the broker time with its µs, like frames (it was in ms).
    expect(h.messages.map((m) => m.ts)).toEqual(live.msgs.map((m) => m.ts));
  });
});

describe("history over HTTP", () => {
  it("from_seq with limit, and last N, oldest first; bad parameters get 400", async () => {
    const ch = uniq("hist.");
    const seqs = await publishMany(ch, 30);
    const r1 = (await (await fetch(`${gw.url}/v1/channels/${ch}/messages?from_seq=${seqs[10]}&limit=5`)).json()) as {
      messages: { seq: number; data: { i: number } }[];
      lastSeq: number;
    };
    expect(r1.messages.map((m) => m.data.i)).toEqual([10, 11, 12, 13, 14]);
    expect(r1.messages.map((m) => m.seq)).toEqual(seqs.slice(10, 15));
    const r2 = (await (await fetch(`${gw.url}/v1/channels/${ch}/messages?last=3`)).json()) as { messages: { data: { i: number } }[] };
    expect(r2.messages.map((m) => m.data.i)).toEqual([27, 28, 29]);
    expect((await fetch(`${gw.url}/v1/channels/${ch}/messages?limit=0`)).status).toBe(400);
    // A channel with nothing stored is an empty page, not an error (regression: it answered 502).
    for (const q of ["last=1", "from_seq=1", `from_seq=${seqs[29]! + 1}`]) {
      const empty = await fetch(`${gw.url}/v1/channels/${uniq("empty.")}/messages?${q}`);
      expect(empty.status).toBe(200);
      expect(((await empty.json()) as { messages: unknown[] }).messages).toEqual([]);
    }
    expect((await fetch(`${gw.url}/v1/channels/a..b/messages`)).status).toBe(400);
  });
});

describe("replay — the direct-get connection", () => {
  const LINK = ["fanout_direct_gets_total", { via: "link" }] as const;
  const MAIN = ["fanout_direct_gets_total", { via: "main" }] as const;
  const UP = ["fanout_direct_link_up"] as const;
  const sample = (url: string, [name, labels]: readonly [string, Labels?]): Promise<number> => metric(url, name, labels);

  it("replay — each worker reads the stream on its own connection (REPLAY_CONNECTION=own), and the metrics say so", async () => {
    await waitFor(async () => (await sample(gw.url, UP)) === 2 || undefined, { what: "both workers' direct-get connections up" });
    const ch = uniq("link.");
    await publishMany(ch, 300);
    const [link0, main0] = [await sample(gw.url, LINK), await sample(gw.url, MAIN)];
    const c = await client();
    await c.sub(ch, { from: "all" });
    await c.waitForMsgs(300);
    expect(contiguousFrom(c.msgs, 0)).toBe(true);
    expect(await sample(gw.url, LINK)).toBeGreaterThan(link0);
    expect(await sample(gw.url, MAIN)).toBe(main0);
  });

  it("replay — REPLAY_CONNECTION=shared reads on the main connection: the same messages, no link", async () => {
    const shared = await startGateway({ natsUrl: nats.url, workers: 1, args: ["--replay-connection", "shared"] });
    try {
      const ch = uniq("shared.");
      await publishMany(ch, 300);
      const c = await clients.open({ url: shared.wsUrl });
      await c.sub(ch, { from: "all" });
      await c.waitForMsgs(300);
      expect(contiguousFrom(c.msgs, 0)).toBe(true);
      expect(await sample(shared.url, MAIN)).toBeGreaterThan(0);
      expect(await sample(shared.url, LINK)).toBe(0);
      expect(await sample(shared.url, UP)).toBe(0);
    } finally {
      await shared.stop();
    }
  });
});
