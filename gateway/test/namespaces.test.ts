// Namespaces against real servers: a real nats-server, the real CLI with two workers and a NAMESPACES_FILE of
// two namespaces — `chat` (its own stream, per-message TTL) and `quiet` (prefix q, every feature off).
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { CLI, startGateway, waitForNewEpoch, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish, TestClient } from "#testkit/ws-client.js";
import { SseReader } from "#testkit/sse-client.js";
import { waitFor } from "#testkit/wait.js";
import WebSocket from "ws";
import { GatewayClient, type WebSocketConstructor } from "../client/src/index.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
let nc: NatsConnection;
let jsm: JetStreamManager;
const clients: TestClient[] = [];
const readers: SseReader[] = [];
let n = 0;
const uniq = (base: string) => `${base}${++n}x${Date.now() % 100_000}`;

const NAMESPACES = `namespaces:
  chat:
    maxAge: 1h
    maxMsgsPerSubject: 500
    duplicateWindow: 30s
    allowMsgTtl: true
  quiet:
    prefix: q
    storage: memory
    maxBytes: 64MiB
    features: { history: false, resume: false, presence: false, publish: false, sse: false, durables: false, lastValues: false }
  recent:
    resumeWindow: 1500ms
  nohist:
    features: { history: false }
`;

async function ws(): Promise<TestClient> {
  const c = await TestClient.connect(gw.wsUrl);
  clients.push(c);
  return c;
}

async function publish(channel: string, data: unknown, query = ""): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${gw.url}/v1/publish/${encodeURIComponent(channel)}${query}`, {
    method: "POST",
    body: JSON.stringify(data),
    headers: { "content-type": "application/json" },
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

async function publishMany(channel: string, count: number): Promise<number[]> {
  const seqs: number[] = [];
  for (let i = 0; i < count; i++) {
    const r = await httpPublish(gw.url, channel, { i });
    expect(r.status).toBe(201);
    seqs.push(r.body.seq as number);
  }
  return seqs;
}

const get = async (path: string): Promise<{ status: number; body: Record<string, unknown> }> => {
  const r = await fetch(`${gw.url}${path}`);
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
};

beforeAll(async () => {
  nats = await startNatsServer();
  const dir = mkdtempSync(join(tmpdir(), "fgw-ns-it-"));
  writeFileSync(join(dir, "namespaces.yaml"), NAMESPACES);
  gw = await startGateway({ natsUrl: nats.url, workers: 2, logLevel: "info", env: { NAMESPACES_FILE: join(dir, "namespaces.yaml") } });
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  for (const c of clients) c.ws.close();
  for (const r of readers) r.close();
  await nc?.close();
  await gw?.stop();
  await nats?.stop();
});

describe("namespaces — streams", () => {
  it("namespaces — each namespace has a stream of its own with its settings, republished to the same live subjects", async () => {
    const chat = (await jsm.streams.info("FANOUT_CHANNELS_CHAT")).config;
    expect(chat.subjects).toEqual(["ev_ns.chat.>"]);
    expect(chat.republish).toMatchObject({ src: "ev_ns.chat.>", dest: "evlive.chat.>" });
    expect(chat.max_age).toBe(3_600 * 1e9);
    expect(chat.max_msgs_per_subject).toBe(500);
    expect(chat.duplicate_window).toBe(30 * 1e9);
    expect(chat.allow_msg_ttl).toBe(true);
    expect(chat.storage).toBe("file");
    const quiet = (await jsm.streams.info("FANOUT_CHANNELS_QUIET")).config;
    expect(quiet.subjects).toEqual(["ev_ns.q.>"]);
    expect(quiet.storage).toBe("memory");
    expect(quiet.max_bytes).toBe(64 * 1_048_576);
    expect(quiet.allow_msg_ttl ?? false).toBe(false);
    const def = (await jsm.streams.info("FANOUT_CHANNELS")).config;
    expect(def.subjects).toEqual(["ev.>"]);
    expect(def.allow_msg_ttl ?? false).toBe(false);
  });

  it("namespaces — a publish to chat.x lands in the chat stream, not the default one", async () => {
    const ch = uniq("chat.land");
    const other = uniq("orders.land");
    const [before, beforeDefault] = await Promise.all([jsm.streams.info("FANOUT_CHANNELS_CHAT"), jsm.streams.info("FANOUT_CHANNELS")]);
    const r = await publish(ch, { hello: 1 });
    expect(r.status).toBe(201);
    const d = await publish(other, { hello: 2 });
    expect(d.status).toBe(201);
    const [after, afterDefault] = await Promise.all([jsm.streams.info("FANOUT_CHANNELS_CHAT"), jsm.streams.info("FANOUT_CHANNELS")]);
    expect(after.state.messages).toBe(before.state.messages + 1);
    expect(afterDefault.state.messages).toBe(beforeDefault.state.messages + 1);
    const stored = await jsm.streams.getMessage("FANOUT_CHANNELS_CHAT", { seq: r.body.seq as number });
    expect(stored?.subject).toBe(`ev_ns.${ch}`);
    expect(await jsm.streams.getMessage("FANOUT_CHANNELS", { last_by_subj: `ev.${ch}` }).catch(() => null)).toBeNull();
  });
});

describe("namespaces — doors on a namespace channel", () => {
  it("namespaces — a message a backend stored in the default stream under a namespace's channel is not delivered as the namespace's", async () => {
    const ch = uniq("chat.stray");
    const live = await ws();
    await live.sub(ch);
    // `ev.chat…` is the default stream's subject (the namespace's is `ev_ns.chat…`): stored there, republished
    // to the live subject every `chat` feed reads, with the default stream's seq.
    const stray = await jetstream(nc).publish(`ev.${ch}`, JSON.stringify({ stray: true }));
    expect(stray.stream).toBe("FANOUT_CHANNELS");
    const seqs = await publishMany(ch, 2);
    const got = await live.waitForMsgs(2);
    // Had the stray been delivered, it would come first: it was stored and republished before them.
    expect(got.map((m) => m.seq)).toEqual(seqs);
  });

  it("namespaces — WebSocket live and a resume from a seq get every message once, in order, with the chat stream's epoch", async () => {
    const ch = uniq("chat.room");
    const live = await ws();
    const okLive = await live.sub(`${ch}.>`);
    const epoch = (await jsm.streams.info("FANOUT_CHANNELS_CHAT")).created;
    expect(okLive.epoch).toBe(epoch);
    const first = await publishMany(`${ch}.a`, 5);
    await live.waitForMsgs(5);
    const resumer = await ws();
    const ok = await resumer.sub(`${ch}.>`, { from: { seq: first[1], epoch } });
    expect(ok).toMatchObject({ op: "ok", epoch });
    expect(ok.truncated).toBeUndefined();
    const more = await publishMany(`${ch}.b`, 3);
    const got = await resumer.waitForMsgs(7);
    expect(got.map((m) => m.seq)).toEqual([...first.slice(1), ...more]);
    const all = await live.waitForMsgs(8);
    expect(all.map((m) => m.seq)).toEqual([...first, ...more]);
    await new Promise<void>((r) => setImmediate(r));
    expect(resumer.msgs.length).toBe(7);
  });

  it("namespaces — history and SSE read the namespace's stream", async () => {
    const ch = uniq("chat.hist");
    const seqs = await publishMany(ch, 4);
    const h = await get(`/v1/channels/${encodeURIComponent(ch)}/messages?from_seq=${seqs[1]}`);
    expect(h.status).toBe(200);
    expect((h.body.messages as { seq: number }[]).map((m) => m.seq)).toEqual(seqs.slice(1));
    expect(h.body.lastSeq).toBe(seqs[3]);
    const sse = await SseReader.open(`${gw.url}/v1/channels/${encodeURIComponent(ch)}/events?from_seq=${seqs[2]}`);
    readers.push(sse);
    expect(sse.status).toBe(200);
    expect(await sse.waitForSeqs(2)).toEqual(seqs.slice(2));
    const next = await publishMany(ch, 1);
    expect(await sse.waitForSeqs(3)).toEqual([...seqs.slice(2), ...next]);
  });

  it("namespaces — starts from the last N and from a time, over WebSocket and SSE, and an SSE resume by Last-Event-ID read the chat stream", async () => {
    const ch = uniq("chat.start");
    // Default-stream messages between them: had a start read the default stream, seqs and counts would differ.
    const seqs: number[] = [];
    for (let i = 0; i < 3; i++) {
      seqs.push(...(await publishMany(ch, 1)));
      await publishMany(uniq("orders.between"), 2);
    }
    const at = new Date().toISOString();
    await waitFor(() => new Date().toISOString() > at || undefined, { what: "a later instant" });
    seqs.push(...(await publishMany(ch, 2)));
    const epoch = (await jsm.streams.info("FANOUT_CHANNELS_CHAT")).created;

    const last = await ws();
    expect(await last.sub(ch, { from: { last: 2 } })).toMatchObject({ op: "ok", epoch });
    expect((await last.waitForMsgs(2)).map((m) => m.seq)).toEqual(seqs.slice(3));
    const since = await ws();
    await since.sub(ch, { from: { time: at } });
    expect((await since.waitForMsgs(2)).map((m) => m.seq)).toEqual(seqs.slice(3));

    const sseLast = await SseReader.open(`${gw.url}/v1/channels/${encodeURIComponent(ch)}/events?last=3`);
    readers.push(sseLast);
    expect(await sseLast.waitForSeqs(3)).toEqual(seqs.slice(2));
    const resumed = await SseReader.open(`${gw.url}/v1/channels/${encodeURIComponent(ch)}/events`, { "Last-Event-ID": `${epoch}:${seqs[1]}` });
    readers.push(resumed);
    expect(await resumed.waitForSeqs(3)).toEqual(seqs.slice(2));
    const more = await publishMany(ch, 1);
    expect(await resumed.waitForSeqs(4)).toEqual([...seqs.slice(2), ...more]);
    expect(resumed.lastEventId).toBe(`${epoch}:${more[0]}`);
    // The WebSocket started from the last 2 gets the new one live too (on its own socket, perhaps another worker: waited for, not assumed there).
    expect((await last.waitForMsgs(3)).map((m) => m.seq)).toEqual([...seqs.slice(3), ...more]);
  });

  it("namespaces — a pattern spanning namespaces is refused with bad_channel on every door", async () => {
    const c = await ws();
    const r = await c.request({ op: "sub", channel: "*.x" });
    expect(r).toMatchObject({ op: "err", code: "bad_channel" });
    expect(r.message).toBe("pattern `*.x` spans namespaces chat, quiet, recent, nohist and the default stream; subscribe per namespace");
    expect(await c.request({ op: "sub", channel: ">" })).toMatchObject({ op: "err", code: "bad_channel" });
    expect(await c.request({ op: "sub", channel: "chat.>" })).toMatchObject({ op: "ok" });
    const sse = await fetch(`${gw.url}/v1/channels/${encodeURIComponent("*.x")}/events`);
    expect(sse.status).toBe(400);
    expect(((await sse.json()) as { error: string }).error).toBe("bad_channel");
    const lv = await get(`/v1/channels/${encodeURIComponent(">")}/messages?last_per_subject=1`);
    expect(lv).toMatchObject({ status: 400, body: { error: "bad_channel" } });
  });
});

describe("namespaces — durables", () => {
  /** Consumers of `stream` that are the durable `name` (the gateway prefixes the name with its user's). */
  const durablesOn = async (stream: string, name: string) => {
    const out: { name: string; filter?: string }[] = [];
    for await (const ci of jsm.consumers.list(stream))
      if (ci.config.durable_name?.endsWith(name)) out.push({ name: ci.name, filter: ci.config.filter_subject });
    return out;
  };

  it("namespaces — a durable on a chat channel lives on the chat stream, gets every message, and has what it left unacked redelivered after a reconnect", async () => {
    const ch = uniq("chat.dur");
    const durable = uniq("nsd");
    const a = await ws();
    expect(await a.sub(ch, { durable, ack: true })).toMatchObject({ op: "ok", durable });
    const onChat = await durablesOn("FANOUT_CHANNELS_CHAT", durable);
    expect(onChat).toHaveLength(1);
    expect(onChat[0]!.filter).toBe(`ev_ns.${ch}`);
    await jsm.consumers.info("FANOUT_CHANNELS_CHAT", onChat[0]!.name);
    expect(await durablesOn("FANOUT_CHANNELS", durable)).toEqual([]);

    const seqs = await publishMany(ch, 5);
    const got = await a.waitForMsgs(5);
    expect(got.map((m) => m.seq)).toEqual(seqs);
    expect(got.every((m) => m.channel === ch && m.durable === durable)).toBe(true);
    for (const m of got.slice(0, 2)) expect((await a.request({ op: "ack", seq: m.seq })).op).toBe("ok");
    a.close();
    await a.waitClosed();

    const b = await ws();
    await b.sub(ch, { durable, ack: true });
    const again = await b.waitForMsgs(3);
    expect(again.map((m) => m.seq).sort((x, y) => x - y)).toEqual(seqs.slice(2));
    expect(again.every((m) => m.redelivered === true)).toBe(true);
    for (const m of again) expect((await b.request({ op: "ack", seq: m.seq })).op).toBe("ok");
    await waitFor(async () => (await jsm.consumers.info("FANOUT_CHANNELS_CHAT", onChat[0]!.name)).num_ack_pending === 0 || undefined, {
      what: "every message of the chat durable acked",
    });
  });

  it("namespaces — the same durable name on a default-stream channel is another consumer, on the default stream, with its own messages", async () => {
    const chat = uniq("chat.durx");
    const orders = uniq("orders.durx");
    const durable = uniq("same");
    const onChat = await ws();
    const onDefault = await ws();
    await onChat.sub(chat, { durable, ack: true });
    // Not durable_conflict: the name is bound to another channel, but on another stream.
    expect(await onDefault.request({ op: "sub", channel: orders, durable, ack: true })).toMatchObject({ op: "ok", durable });
    const [c] = await durablesOn("FANOUT_CHANNELS_CHAT", durable);
    const [d] = await durablesOn("FANOUT_CHANNELS", durable);
    expect(c?.filter).toBe(`ev_ns.${chat}`);
    expect(d?.filter).toBe(`ev.${orders}`);
    const chatSeqs = await publishMany(chat, 3);
    const orderSeqs = await publishMany(orders, 2);
    expect((await onChat.waitForMsgs(3)).map((m) => [m.channel, m.seq])).toEqual(chatSeqs.map((s) => [chat, s]));
    expect((await onDefault.waitForMsgs(2)).map((m) => [m.channel, m.seq])).toEqual(orderSeqs.map((s) => [orders, s]));
    for (const m of onChat.msgs) await onChat.request({ op: "ack", seq: m.seq });
    for (const m of onDefault.msgs) await onDefault.request({ op: "ack", seq: m.seq });
    await new Promise<void>((r) => setImmediate(r));
    expect(onChat.msgs.length).toBe(3);
    expect(onDefault.msgs.length).toBe(2);
  });
});

describe("namespaces — presence and last values", () => {
  it("namespaces — presence on a chat channel: join and leave reach a watcher, the list over WebSocket and HTTP names the members", async () => {
    const ch = uniq("chat.lobby");
    const watcher = await ws();
    await watcher.sub(ch, { presence: "watch" });
    const m1 = await ws();
    const m2 = await ws();
    const id1 = (await m1.sub(ch, { presence: true, info: { name: "one" } })).client as string;
    const id2 = (await m2.sub(ch, { presence: true })).client as string;
    await waitFor(() => [id1, id2].every((id) => watcher.frames.some((f) => f.op === "join" && f.channel === ch && f.client === id)) || undefined, {
      what: "a join per member",
    });
    const listed = await watcher.request({ op: "presence", channel: ch });
    expect(listed.op).toBe("presence");
    expect((listed.members as { client: string }[]).map((x) => x.client).sort()).toEqual([id1, id2].sort());
    expect((listed.members as { client: string; info?: unknown }[]).find((x) => x.client === id1)?.info).toEqual({ name: "one" });
    const http = await get(`/v1/channels/${encodeURIComponent(ch)}/presence`);
    expect(http.status).toBe(200);
    expect((http.body.members as { client: string }[]).map((x) => x.client).sort()).toEqual([id1, id2].sort());
    m2.close();
    await waitFor(() => watcher.frames.find((f) => f.op === "leave" && f.channel === ch && f.client === id2), { what: "the leave of the closed member" });
    const after = await get(`/v1/channels/${encodeURIComponent(ch)}/presence`);
    expect((after.body.members as { client: string }[]).map((x) => x.client)).toEqual([id1]);
    expect(watcher.frames.filter((f) => f.op === "join" && f.channel === ch).length).toBe(2);
  });

  it("namespaces — last values of chat.room.* are the chat stream's, never what the default stream holds under the same channels", async () => {
    const room = uniq("chat.room");
    const js = jetstream(nc);
    // Stored in the default stream under the namespace's channels (a backend publishing to ev.chat…): not chat's.
    const stray = await js.publish(`ev.${room}.a`, JSON.stringify({ stray: "a" }));
    expect(stray.stream).toBe("FANOUT_CHANNELS");
    const a1 = (await publish(`${room}.a`, { v: "a1" })).body.seq as number;
    const b1 = (await publish(`${room}.b`, { v: "b1" })).body.seq as number;
    const a2 = (await publish(`${room}.a`, { v: "a2" })).body.seq as number;
    await js.publish(`ev.${room}.c`, JSON.stringify({ stray: "c" }));
    expect(a1).toBeLessThan(b1);

    const c = await ws();
    const ok = await c.sub(`${room}.*`, { from: "last_per_subject" });
    expect(ok.epoch).toBe((await jsm.streams.info("FANOUT_CHANNELS_CHAT")).created);
    await waitFor(() => c.frames.find((f) => f.op === "live" && f.sub === `${room}.*`), { what: "live frame" });
    expect(c.msgs.map((m) => [m.channel, m.seq, m.data])).toEqual([
      [`${room}.b`, b1, { v: "b1" }],
      [`${room}.a`, a2, { v: "a2" }],
    ]);
    const http = await get(`/v1/channels/${encodeURIComponent(`${room}.*`)}/messages?last_per_subject=1`);
    expect(http.status).toBe(200);
    expect((http.body.messages as { channel: string; seq: number }[]).map((m) => [m.channel, m.seq])).toEqual([
      [`${room}.b`, b1],
      [`${room}.a`, a2],
    ]);
    expect(http.body.lastSeq).toBe((await jsm.streams.info("FANOUT_CHANNELS_CHAT")).state.last_seq);
    const next = (await publish(`${room}.c`, { v: "c1" })).body.seq as number;
    expect((await c.waitForMsgs(3))[2]).toMatchObject({ channel: `${room}.c`, seq: next });
  });
});

describe("namespaces — live repairs", () => {
  it("namespaces — a chat message stored but never republished is found at the channel's next message and read back from the chat stream: once, in order", async () => {
    const ch = uniq("chat.gap");
    const c = await ws();
    await c.sub(`${ch}.*`);
    const js = jetstream(nc);
    const pub = async (sub: string, i: number) => (await js.publish(`ev_ns.${ch}.${sub}`, JSON.stringify({ i }))).seq;
    const seqs = [await pub("y", 0)];
    const info = await jsm.streams.info("FANOUT_CHANNELS_CHAT");
    const rule = info.config.republish;
    expect(rule).toMatchObject({ src: "ev_ns.chat.>", dest: "evlive.chat.>" });
    await jsm.streams.update("FANOUT_CHANNELS_CHAT", { ...info.config, republish: undefined });
    seqs.push(await pub("y", 1)); // stored, never republished
    await jsm.streams.update("FANOUT_CHANNELS_CHAT", { ...(await jsm.streams.info("FANOUT_CHANNELS_CHAT")).config, republish: rule });
    for (let i = 2; i < 5; i++) seqs.push(await pub("x", i));
    // A default-stream message on the same channel between them: not chat's, neither delivered nor a gap.
    await js.publish(`ev.${ch}.y`, JSON.stringify({ stray: true }));
    seqs.push(await pub("y", 5));
    await c.waitForMsgs(6);
    const byChannel = (name: string) => c.msgs.filter((m) => m.channel === `${ch}.${name}`).map((m) => (m.data as { i: number }).i);
    expect(byChannel("y")).toEqual([0, 1, 5]);
    expect(byChannel("x")).toEqual([2, 3, 4]);
    expect(c.msgs.map((m) => m.seq).sort((a, b) => a - b)).toEqual(seqs);
    await new Promise<void>((r) => setImmediate(r));
    expect(c.msgs.length).toBe(6);
  });
});

describe("namespaces — feature switches", () => {
  it("namespaces — every switched-off feature is refused with feature_disabled on every door that has it", async () => {
    const ch = uniq("q.off");
    const c = await ws();
    const refused = { op: "err", code: "feature_disabled", temporary: false };
    expect(await c.request({ op: "sub", channel: ch, from: { seq: 1 } })).toMatchObject(refused);
    expect(await c.request({ op: "sub", channel: ch, from: "all" })).toMatchObject(refused);
    expect(await c.request({ op: "sub", channel: ch, from: { last: 3 } })).toMatchObject(refused);
    expect(await c.request({ op: "sub", channel: `${ch}.>`, from: "last_per_subject" })).toMatchObject(refused);
    expect(await c.request({ op: "sub", channel: ch, presence: true })).toMatchObject(refused);
    expect(await c.request({ op: "sub", channel: ch, durable: "d1", ack: true })).toMatchObject(refused);
    expect(await c.request({ op: "presence", channel: ch })).toMatchObject(refused);
    expect(await c.request({ op: "pub", channel: ch, data: 1 })).toMatchObject(refused);
    const batch = await c.request({ op: "pub", batch: [{ channel: ch, data: 1 }] });
    expect((batch.results as { error: string }[])[0]?.error).toBe("feature_disabled");
    // Live delivery is not a feature: it stays.
    expect(await c.request({ op: "sub", channel: ch })).toMatchObject({ op: "ok" });

    const http = { status: 403, body: { error: "feature_disabled" } };
    expect(await publish(ch, 1)).toMatchObject(http);
    expect(await get(`/v1/channels/${encodeURIComponent(ch)}/messages`)).toMatchObject(http);
    expect(await get(`/v1/channels/${encodeURIComponent(`${ch}.>`)}/messages?last_per_subject=1`)).toMatchObject(http);
    expect(await get(`/v1/channels/${encodeURIComponent(ch)}/presence`)).toMatchObject(http);
    const sse = await fetch(`${gw.url}/v1/channels/${encodeURIComponent(ch)}/events`);
    expect(sse.status).toBe(403);
    expect(((await sse.json()) as { error: string }).error).toBe("feature_disabled");
  });

  it("namespaces — the same requests on a channel of the default stream are served", async () => {
    const ch = uniq("orders.on");
    const c = await ws();
    expect(await c.request({ op: "sub", channel: ch, from: "all", presence: true })).toMatchObject({ op: "ok" });
    expect(await c.request({ op: "pub", channel: ch, data: 1 })).toMatchObject({ op: "ok" });
    expect((await get(`/v1/channels/${encodeURIComponent(ch)}/messages`)).status).toBe(200);
  });
});

describe("namespaces — what each switch does, and how to see it", () => {
  it("namespaces — history: false refuses history reads and starts from the beginning, a time or the last N; a resume from a seq, even seq 1, still reads what the stream keeps", async () => {
    const ch = uniq("nohist.x");
    const seqs = await publishMany(ch, 3);
    const c = await ws();
    const refused = { op: "err", code: "feature_disabled", temporary: false };
    expect(await c.request({ op: "sub", channel: ch, from: "all" })).toMatchObject(refused);
    expect(await c.request({ op: "sub", channel: ch, from: { last: 2 } })).toMatchObject(refused);
    expect(await c.request({ op: "sub", channel: ch, from: { time: new Date(Date.now() - 60_000).toISOString() } })).toMatchObject(refused);
    expect(await get(`/v1/channels/${encodeURIComponent(ch)}/messages`)).toMatchObject({ status: 403, body: { error: "feature_disabled" } });
    // `resume` is on: a "resume" from the stream's first seq replays every stored message of the channel.
    expect(await c.request({ op: "sub", channel: ch, from: { seq: 1 } })).toMatchObject({ op: "ok" });
    expect((await c.waitForMsgs(3)).map((m) => m.seq)).toEqual(seqs);
  });

  it("namespaces — each namespace's settings in effect: one start line each, the same in /v1/stats; `stream created` names the retention", async () => {
    const line = gw.logs.find((l) => l.msg === "namespace settings" && l.namespace === "quiet");
    const quiet = {
      prefix: "q",
      stream: "FANOUT_CHANNELS_QUIET",
      storage: "memory",
      replicas: 1,
      maxAgeMs: 86_400_000,
      maxBytes: 64 * 1_048_576,
      maxMsgsPerSubject: -1,
      duplicateWindowMs: 120_000,
      allowMsgTtl: false,
      features: { history: false, resume: false, presence: false, publish: false, sse: false, durables: false, lastValues: false },
      resumeWindowMs: 0,
      coalesceMs: 0,
    };
    expect(line).toMatchObject(quiet);
    expect(gw.logs.find((l) => l.msg === "namespace settings" && l.namespace === "chat")).toMatchObject({ maxAgeMs: 3_600_000, maxMsgsPerSubject: 500 });
    expect(gw.logs.find((l) => l.msg === "default stream settings")).toMatchObject({
      stream: "FANOUT_CHANNELS",
      maxAgeMs: 86_400_000,
      maxBytes: 1_073_741_824,
    });
    expect(gw.logs.filter((l) => l.msg === "namespace settings").map((l) => l.namespace)).toEqual(["chat", "quiet", "recent", "nohist"]);
    const created = gw.logs.find((l) => l.msg === "stream created" && l.stream === "FANOUT_CHANNELS_CHAT");
    expect(created).toMatchObject({ maxAgeMs: 3_600_000, maxMsgsPerSubject: 500, duplicateWindowMs: 30_000, maxBytes: 1_073_741_824 });

    const stats = (await (await fetch(`${gw.metricsUrl}/v1/stats`)).json()) as {
      namespaces: Record<string, unknown>[];
      defaultStream: Record<string, unknown>;
    };
    expect(stats.namespaces.map((ns) => ns.name)).toEqual(["chat", "quiet", "recent", "nohist"]);
    expect(stats.namespaces[1]).toMatchObject({ name: "quiet", ...quiet });
    expect(stats.namespaces[2]).toMatchObject({ name: "recent", resumeWindowMs: 1_500 });
    expect(stats.namespaces[3]).toMatchObject({ name: "nohist", features: { history: false, resume: true, lastValues: true } });
    expect(stats.defaultStream).toMatchObject({ stream: "FANOUT_CHANNELS", storage: "file", maxAgeMs: 86_400_000 });
  });
});

describe("namespaces — resume window", () => {
  it("namespaces — a resume from before the window starts at the window's first message, reported truncated", async () => {
    const ch = uniq("recent.w");
    const old = await publishMany(ch, 3);
    const at = Date.now();
    // The window is time: what was stored before now − 1.5 s is outside it.
    await waitFor(() => Date.now() > at + 1_700, { timeoutMs: 5_000, what: "the old messages left the window" });
    const fresh = await publishMany(ch, 2);
    const c = await ws();
    const ok = await c.request({ op: "sub", channel: ch, from: { seq: old[0] } });
    expect(ok).toMatchObject({ op: "ok", truncated: true });
    expect((await c.waitForMsgs(2)).map((m) => m.seq)).toEqual(fresh);
    const inside = await ws();
    const ok2 = await inside.request({ op: "sub", channel: ch, from: { seq: fresh[1] } });
    expect(ok2.truncated).toBeUndefined();
    expect((await inside.waitForMsgs(1)).map((m) => m.seq)).toEqual([fresh[1]]);
    // Only resumes and starts are windowed: history still reads what the stream keeps.
    const h = await get(`/v1/channels/${encodeURIComponent(ch)}/messages?from_seq=${old[0]}`);
    expect((h.body.messages as { seq: number }[]).map((m) => m.seq)).toEqual([...old, ...fresh]);
  });
});

describe("namespaces — per-message TTL", () => {
  it("namespaces — a publish with a ttl carries Nats-TTL and expires from the stream", async () => {
    const ch = uniq("chat.ttl");
    const r = await publish(ch, { short: true }, "?ttl=1s");
    expect(r.status).toBe(201);
    const seq = r.body.seq as number;
    const stored = await jsm.streams.getMessage("FANOUT_CHANNELS_CHAT", { seq });
    expect(stored?.header.get("Nats-TTL")).toBe("1s");
    const c = await ws();
    const ws1 = await c.request({ op: "pub", channel: ch, data: 2, ttl: "2s" });
    expect(ws1).toMatchObject({ op: "ok" });
    const kept = await publish(ch, { long: true });
    await waitFor(async () => (await jsm.streams.getMessage("FANOUT_CHANNELS_CHAT", { seq }).catch(() => null)) === null, {
      timeoutMs: 15_000,
      what: "the 1s message expired",
    });
    await waitFor(async () => (await jsm.streams.getMessage("FANOUT_CHANNELS_CHAT", { seq: ws1.seq as number }).catch(() => null)) === null, {
      timeoutMs: 15_000,
      what: "the 2s message expired",
    });
    expect((await jsm.streams.getMessage("FANOUT_CHANNELS_CHAT", { seq: kept.body.seq as number }))?.seq).toBe(kept.body.seq);
  });

  it("namespaces — the SDK's publish and batch items take a ttl", async () => {
    const client = new GatewayClient(gw.wsUrl, { WebSocket: WebSocket as unknown as WebSocketConstructor });
    await client.connect();
    try {
      const r = await client.publish(uniq("chat.sdk"), { a: 1 }, { ttl: "90s" });
      expect((await jsm.streams.getMessage("FANOUT_CHANNELS_CHAT", { seq: r.seq }))?.header.get("Nats-TTL")).toBe("90s");
      const [item] = await client.publishBatch([{ channel: uniq("chat.sdk"), data: 2, ttl: "2m" }]);
      const seq = (item as { seq: number }).seq;
      expect((await jsm.streams.getMessage("FANOUT_CHANNELS_CHAT", { seq }))?.header.get("Nats-TTL")).toBe("120s");
    } finally {
      await client.close();
    }
  });

  it("namespaces — a ttl where the stream keeps none is refused; a bad ttl is bad_request", async () => {
    const c = await ws();
    expect(await c.request({ op: "pub", channel: uniq("orders.ttl"), data: 1, ttl: "30s" })).toMatchObject({ op: "err", code: "feature_disabled" });
    expect(await publish(uniq("q.ttl"), 1, "?ttl=30s")).toMatchObject({ status: 403, body: { error: "feature_disabled" } });
    const batch = await c.request({
      op: "pub",
      batch: [
        { channel: uniq("orders.ttl"), data: 1, ttl: "30s" },
        { channel: uniq("chat.ttl"), data: 1, ttl: "30s" },
      ],
    });
    const [refused, stored] = batch.results as Record<string, unknown>[];
    expect(refused?.error).toBe("feature_disabled");
    expect(typeof stored?.seq).toBe("number");
    expect(await c.request({ op: "pub", channel: uniq("chat.ttl"), data: 1, ttl: "soon" })).toMatchObject({ op: "err", code: "bad_request" });
    expect(await publish(uniq("chat.ttl"), 1, "?ttl=0s")).toMatchObject({ status: 400, body: { error: "bad_request" } });
  });

  it("namespaces — a ttl NATS cannot hold is bad_request at every door, not a broker error", async () => {
    const c = await ws();
    for (const ttl of ["104249991374d", "9223372037s", "36501d"]) {
      expect(await publish(uniq("chat.ttl"), 1, `?ttl=${ttl}`)).toMatchObject({
        status: 400,
        body: { error: "bad_request", message: expect.stringContaining("36500d") },
      });
      expect(await c.request({ op: "pub", channel: uniq("chat.ttl"), data: 1, ttl })).toMatchObject({ op: "err", code: "bad_request" });
    }
    for (const ttl of [9007199254740991, 9223372037])
      expect(await c.request({ op: "pub", channel: uniq("chat.ttl"), data: 1, ttl })).toMatchObject({ op: "err", code: "bad_request" });
    const batch = await c.request({ op: "pub", batch: [{ channel: uniq("chat.ttl"), data: 1, ttl: 9223372037 }] });
    expect((batch.results as Record<string, unknown>[])[0]).toMatchObject({ error: "bad_request" });
  });

  it("namespaces — a ttl longer than the namespace's maxAge is refused, saying so", async () => {
    const c = await ws();
    const longer = { error: "bad_request", message: expect.stringMatching(/ttl 7200s is longer than namespace chat's maxAge \(3600s\)/) };
    expect(await publish(uniq("chat.ttl"), 1, "?ttl=2h")).toMatchObject({ status: 400, body: longer });
    expect(await c.request({ op: "pub", channel: uniq("chat.ttl"), data: 1, ttl: "2h" })).toMatchObject({
      op: "err",
      code: "bad_request",
      message: longer.message,
    });
    const r = await fetch(`${gw.url}/v1/publish`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify([{ channel: uniq("chat.ttl"), data: 1, ttl: "2h" }]),
    });
    expect(((await r.json()) as { results: unknown[] }).results[0]).toMatchObject(longer);
    // maxAge itself is allowed
    expect(await publish(uniq("chat.ttl"), 1, "?ttl=1h")).toMatchObject({ status: 201 });
  });
});

describe("namespaces — a recreated namespace stream", () => {
  it("namespaces — the stream watch creates it again; only its subscribers are closed with 1012, and resume with epochChanged", async () => {
    const chatCh = uniq("chat.epoch");
    const otherCh = uniq("orders.epoch");
    const onChat = await ws();
    const okChat = await onChat.sub(chatCh, { from: "all" });
    const onOther = await ws();
    await onOther.sub(otherCh);
    const from = gw.logs.length;
    await jsm.streams.delete("FANOUT_CHANNELS_CHAT");
    await waitFor(() => gw.logs.slice(from).some((l) => l.msg === "stream setup drifted and was repaired") || undefined, {
      what: "FANOUT_CHANNELS_CHAT re-created",
    });
    expect(await onChat.waitClosed(15_000)).toBe(1012);
    // Both workers heard of the new epoch (each logs it), so a socket they would close is closed by now.
    await waitForNewEpoch(gw, "FANOUT_CHANNELS_CHAT", from);
    // The default stream's subscriber stays, and still gets its messages.
    expect(onOther.open).toBe(true);
    const seq = (await httpPublish(gw.url, otherCh, { still: true })).body.seq as number;
    expect((await onOther.waitForMsgs(1)).map((m) => m.seq)).toEqual([seq]);
    const again = await ws();
    expect(await again.sub(chatCh, { from: { seq: 1, epoch: okChat.epoch } })).toMatchObject({ op: "ok", epochChanged: true });
    expect((await jsm.streams.info("FANOUT_CHANNELS_CHAT")).config.allow_msg_ttl).toBe(true);
  });
});

describe("namespaces — the CLI", () => {
  it("namespaces — a bad NAMESPACES_FILE exits 1 naming the namespace and the field", () => {
    const dir = mkdtempSync(join(tmpdir(), "fgw-ns-bad-"));
    writeFileSync(join(dir, "ns.json"), JSON.stringify({ namespaces: { chat: { maxAge: "x" } } }));
    const r = spawnSync(process.execPath, [CLI, "--port", "0", "--namespaces-file", join(dir, "ns.json")], { encoding: "utf8", timeout: 30_000 });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('NAMESPACES_FILE (--namespaces-file): namespace "chat": maxAge must be a duration like 7d, 24h, 30s or 0, not "x"');
  });

  it("namespaces — a namespace whose maxAge is shorter than its duplicate window exits 1 naming it and both fields", () => {
    const dir = mkdtempSync(join(tmpdir(), "fgw-ns-dup-"));
    writeFileSync(join(dir, "ns.json"), JSON.stringify({ namespaces: { brief: { maxAge: "1m" } } }));
    const r = spawnSync(process.execPath, [CLI, "--port", "0", "--namespaces-file", join(dir, "ns.json")], { encoding: "utf8", timeout: 30_000 });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(
      'NAMESPACES_FILE (--namespaces-file): namespace "brief": maxAge (60000 ms) is shorter than duplicateWindow (120000 ms, from STREAM_DUPLICATE_WINDOW)',
    );
  });
});
