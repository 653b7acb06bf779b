// Namespaces on a real 3-node JetStream cluster: the default stream and a namespace's stream both R3, each with a
// leader of its own. The namespace stream's leader steps down, and separately its node is killed (kill -9) and
// restarted, while a publisher writes to a channel of each stream: both WebSocket subscribers get every message
// once, in order, exactly what each stream holds, and the default stream's leader and subscriber are untouched.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamManager, type StreamInfo } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getJson, startNatsCluster, type NatsCluster, type NatsClusterNode } from "#testkit/nats-cluster.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { TestClient } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";

const DEFAULT = "FANOUT_CHANNELS";
const CHAT = "FANOUT_CHANNELS_CHAT";
let cluster: NatsCluster;
let nc: NatsConnection;
let jsm: JetStreamManager;
let gw: GatewayHandle;
let dir: string;
const sockets: TestClient[] = [];
let n = 0;
const uniq = (base: string) => `${base}${++n}`;

async function socket(): Promise<TestClient> {
  const c = await TestClient.connect(gw.wsUrl);
  sockets.push(c);
  return c;
}

const info = (stream: string): Promise<StreamInfo> => waitFor(() => jsm.streams.info(stream), { timeoutMs: 20_000, what: `${stream} info` });
const leaderOf = async (stream: string): Promise<string | undefined> => (await info(stream)).cluster?.leader;

/** The cluster node holding the gateway worker's NATS connection. */
async function nodeOfGateway(): Promise<NatsClusterNode> {
  return waitFor(
    async () => {
      for (const x of cluster.nodes.filter((y) => y.running)) {
        const z = await getJson<{ connections?: Array<{ name?: string }> }>(`http://127.0.0.1:${x.monitorPort}/connz?limit=1024`);
        if (z?.connections?.some((c) => c.name === "fanout-gateway-worker-1")) return x;
      }
      return undefined;
    },
    { timeoutMs: 10_000, what: "the node the gateway worker is connected to" },
  );
}

/** Steps `stream`'s leader down, preferring `to`; resolves with the new leader once every replica is current. */
async function stepDown(stream: string, to?: string): Promise<string> {
  const was = await leaderOf(stream);
  await nc
    .request(`$JS.API.STREAM.LEADER.STEPDOWN.${stream}`, to ? JSON.stringify({ placement: { preferred: to } }) : undefined, { timeout: 5_000 })
    .catch(() => undefined);
  return waitFor(
    async () => {
      const c = (await jsm.streams.info(stream)).cluster;
      return c?.leader && c.leader !== was && (c.replicas ?? []).every((r) => r.current) ? c.leader : undefined;
    },
    { timeoutMs: 15_000, what: `a new ${stream} leader after the stepdown` },
  );
}

/**
 * Moves the leaders so that chat's leads on a node the default stream's leader is not on: the gateway's node when
 * `onGatewayNode`, another one otherwise.
 */
async function placeLeaders(onGatewayNode = false): Promise<{ chatNode: NatsClusterNode; defaultLeader: string }> {
  for (let attempt = 0; attempt < 8; attempt++) {
    const gwNode = await nodeOfGateway();
    const target = onGatewayNode ? gwNode : cluster.nodes.find((x) => x !== gwNode)!;
    const [chatLeader, defaultLeader] = [await leaderOf(CHAT), await leaderOf(DEFAULT)];
    if (chatLeader === target.name && defaultLeader && defaultLeader !== target.name) return { chatNode: target, defaultLeader };
    if (chatLeader !== target.name) await stepDown(CHAT, target.name);
    else await stepDown(DEFAULT, cluster.nodes.find((x) => x !== target)!.name);
  }
  throw new Error(`could not place the chat stream's leader ${onGatewayNode ? "on" : "away from"} the gateway's node, apart from the default stream's leader`);
}

/** Every seq `stream` holds under `subject`, read with an ordered consumer. */
async function stored(stream: string, subject: string, expected: number): Promise<number[]> {
  const oc = await jetstream(nc).consumers.get(stream, { filter_subjects: [subject] });
  const out: number[] = [];
  const it = await oc.consume();
  for await (const m of it) {
    out.push(m.seq);
    if (m.info.pending === 0) break;
  }
  await it.close();
  expect(out.length).toBe(expected);
  return out;
}

/**
 * A closed-loop HTTP publisher on one channel: each message with its own Idempotency-Key, a failed publish
 * (503, 502, a timeout) retried with the same key for up to 25 s, so each message is stored once.
 */
class Publisher {
  readonly acked: Array<{ seq: number; at: number }> = [];
  readonly failures: string[] = [];
  private stopped = false;
  private readonly done: Promise<void>;

  constructor(readonly channel: string) {
    this.done = this.loop();
  }

  private async loop(): Promise<void> {
    for (let i = 0; !this.stopped && i < 50_000; i++) {
      const key = `${this.channel}-${i}`;
      const first = Date.now();
      for (;;) {
        const r = await this.send(key, i);
        if (typeof r === "number") {
          this.acked.push({ seq: r, at: Date.now() });
          break;
        }
        this.failures.push(r);
        if (Date.now() - first > 25_000) throw new Error(`publish ${key} to ${this.channel} kept failing: ${r}`);
        await new Promise((res) => setTimeout(res, 50)); // retry backoff, as a real publisher's
      }
    }
  }

  private async send(key: string, i: number): Promise<number | string> {
    try {
      const r = await fetch(`${gw.url}/v1/publish/${this.channel}`, {
        method: "POST",
        body: JSON.stringify({ i }),
        headers: { "content-type": "application/json", "idempotency-key": key },
        signal: AbortSignal.timeout(10_000),
      });
      const body = (await r.json()) as { seq?: number; error?: string };
      return r.status === 201 && typeof body.seq === "number" ? body.seq : `${r.status} ${body.error ?? ""}`;
    } catch (e) {
      return String((e as Error).message ?? e);
    }
  }

  /** Longest wait between two acks, in ms. */
  maxGap(): number {
    let gap = 0;
    for (let i = 1; i < this.acked.length; i++) gap = Math.max(gap, this.acked[i]!.at - this.acked[i - 1]!.at);
    return gap;
  }

  ackedSince(t: number): number {
    return this.acked.filter((a) => a.at > t).length;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
  }
}

/** A channel of one stream: a live subscriber, a durable subscriber that acks each message as it comes, a publisher. */
type Lane = { stream: string; subjectPrefix: string; channel: string; sub: TestClient; durable: TestClient; pub: Publisher };

async function lane(stream: string, subjectPrefix: string, channel: string): Promise<Lane> {
  const sub = await socket();
  await sub.sub(channel);
  const durable = await socket();
  await durable.sub(channel, { durable: `d${++n}`, ack: true });
  durable.ws.on("message", (d: Buffer) => {
    const f = JSON.parse(d.toString()) as { op: string; seq?: number };
    if (f.op === "msg") durable.sendRaw(JSON.stringify({ op: "ack", seq: f.seq }));
  });
  return { stream, subjectPrefix, channel, sub, durable, pub: new Publisher(channel) };
}

/**
 * The live subscriber has exactly what its stream holds under its channel, once and in order, and its socket
 * stayed open; the durable one got each of those messages at least once, and nothing else.
 */
async function expectEveryMessageOnce(l: Lane): Promise<{ held: number[]; durableRepeats: number }> {
  const acked = l.pub.acked.map((a) => a.seq);
  const held = await stored(l.stream, `${l.subjectPrefix}.${l.channel}`, acked.length);
  expect(held).toEqual(acked);
  await l.sub.waitForMsgs(held.length, 30_000);
  await new Promise<void>((r) => setImmediate(r));
  expect(l.sub.msgs.map((m) => m.seq)).toEqual(held);
  expect(l.sub.msgs.map((m) => (m.data as { i: number }).i)).toEqual(held.map((_, i) => i));
  expect(l.sub.closeCode).toBeUndefined();
  const got = () => new Set(l.durable.msgs.map((m) => m.seq));
  await waitFor(() => got().size >= held.length || undefined, { timeoutMs: 45_000, what: `${held.length} messages at the durable (has ${got().size})` });
  expect([...got()].sort((a, b) => a - b)).toEqual(held);
  expect(l.durable.closeCode).toBeUndefined();
  return { held, durableRepeats: l.durable.msgs.length - held.length };
}

/** Publishing on both lanes; `fault` runs after 100 acks on each, and publishing goes on until 100 more after it. */
async function underLoad(fault: (lanes: { chat: Lane; other: Lane }) => Promise<void>): Promise<{ chat: Lane; other: Lane }> {
  const chat = await lane(CHAT, "ev_ns", uniq("chat.ha"));
  const other = await lane(DEFAULT, "ev", uniq("orders.ha"));
  try {
    await waitFor(() => (chat.pub.acked.length >= 100 && other.pub.acked.length >= 100) || undefined, { timeoutMs: 30_000, what: "100 acks on each lane" });
    await fault({ chat, other });
    const after = Date.now();
    await waitFor(() => (chat.pub.ackedSince(after) >= 100 && other.pub.ackedSince(after) >= 100) || undefined, {
      timeoutMs: 45_000,
      what: "100 acks on each lane after the fault",
    });
  } finally {
    await Promise.all([chat.pub.stop(), other.pub.stop()]);
  }
  return { chat, other };
}

beforeAll(async () => {
  cluster = await startNatsCluster();
  nc = await connect({ servers: cluster.urls, name: "namespaces-cluster-test", reconnectTimeWait: 100, maxReconnectAttempts: -1 });
  jsm = await jetstreamManager(nc, { timeout: 5_000 });
  dir = mkdtempSync(join(tmpdir(), "fgw-ns-cluster-"));
  writeFileSync(join(dir, "namespaces.yaml"), "namespaces:\n  chat:\n    replicas: 3\n");
  gw = await startGateway({
    natsUrl: cluster.urls,
    workers: 1,
    logLevel: "info",
    readyTimeoutMs: 60_000,
    // The durable subscribers ack every message, faster than the default frame rate (100/s) allows.
    args: ["--stream-replicas", "3", "--shutdown-timeout", "5s", "--frame-rate=-1", "--frame-burst", "100000"],
    env: { NAMESPACES_FILE: join(dir, "namespaces.yaml") },
  });
}, 120_000);

afterAll(async () => {
  for (const c of sockets) c.close();
  await gw?.stop();
  await nc?.close();
  await cluster?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("namespaces on a 3-node cluster", () => {
  it("namespaces cluster — the default stream and the namespace's are both R3, each replicated on every node", async () => {
    for (const s of [DEFAULT, CHAT]) {
      const si = await info(s);
      expect(si.config.num_replicas).toBe(3);
      expect(si.cluster?.leader).toBeTruthy();
      expect(new Set([si.cluster!.leader, ...(si.cluster!.replicas ?? []).map((r) => r.name)])).toEqual(new Set(cluster.nodes.map((x) => x.name)));
    }
    expect((await info(CHAT)).config.subjects).toEqual(["ev_ns.chat.>"]);
  });

  it("namespaces cluster — the namespace stream's leader steps down under load: both subscribers get every message once, in order; the default stream keeps its leader", async () => {
    const { defaultLeader } = await placeLeaders();
    const chatLeader = await leaderOf(CHAT);
    let newLeader = "";
    const { chat, other } = await underLoad(async () => {
      newLeader = await stepDown(CHAT);
    });
    expect(newLeader).not.toBe(chatLeader);
    expect(await leaderOf(DEFAULT)).toBe(defaultLeader);
    const { held, durableRepeats } = await expectEveryMessageOnce(chat);
    const otherResult = await expectEveryMessageOnce(other);
    console.log(
      `namespaces-cluster-stepdown ${JSON.stringify({ chat: held.length, other: other.pub.acked.length, chatFailures: chat.pub.failures.length, otherFailures: other.pub.failures.length, chatAckGapMs: chat.pub.maxGap(), otherAckGapMs: other.pub.maxGap(), chatDurableRepeats: durableRepeats, otherDurableRepeats: otherResult.durableRepeats })}`,
    );
    expect(other.pub.failures).toEqual([]);
  }, 150_000);

  it("namespaces cluster — the node leading the namespace stream is killed (-9) and restarted under load: both subscribers get every message once, in order; the default stream keeps its leader", async () => {
    const { chatNode, defaultLeader } = await placeLeaders();
    const { chat, other } = await underLoad(async (lanes) => {
      await chatNode.kill();
      const killedAt = Date.now();
      await waitFor(async () => ((await leaderOf(CHAT)) !== chatNode.name ? true : undefined), { timeoutMs: 30_000, what: "a new chat stream leader" });
      await waitFor(() => lanes.chat.pub.ackedSince(killedAt) >= 50 || undefined, { timeoutMs: 30_000, what: "chat publishes acked with the node down" });
      await chatNode.restart();
    });
    expect(await leaderOf(DEFAULT)).toBe(defaultLeader);
    const { held, durableRepeats } = await expectEveryMessageOnce(chat);
    const otherResult = await expectEveryMessageOnce(other);
    // The default stream lost a replica, not its leader: its publishes never failed.
    expect(other.pub.failures).toEqual([]);
    // The restarted node caught up with the namespace stream.
    await waitFor(
      async () => {
        const si = await jsm.streams.info(CHAT);
        return (si.cluster?.replicas ?? []).length === 2 && si.cluster!.replicas!.every((r) => r.current && !r.offline) ? true : undefined;
      },
      { timeoutMs: 30_000, what: `${chatNode.name} current again on ${CHAT}` },
    );
    console.log(
      `namespaces-cluster-kill ${JSON.stringify({ victim: chatNode.name, chat: held.length, other: other.pub.acked.length, chatFailures: chat.pub.failures.length, otherFailures: other.pub.failures.length, chatAckGapMs: chat.pub.maxGap(), otherAckGapMs: other.pub.maxGap(), chatDurableRepeats: durableRepeats, otherDurableRepeats: otherResult.durableRepeats })}`,
    );
  }, 180_000);

  it("namespaces cluster — the node leading the namespace stream and holding the gateway's NATS connection is killed (-9) and restarted under load: both feeds repair after the reconnect, every message once, in order", async () => {
    const { chatNode, defaultLeader } = await placeLeaders(true);
    const { chat, other } = await underLoad(async (lanes) => {
      await chatNode.kill();
      const killedAt = Date.now();
      await waitFor(() => (lanes.chat.pub.ackedSince(killedAt) >= 50 && lanes.other.pub.ackedSince(killedAt) >= 50) || undefined, {
        timeoutMs: 30_000,
        what: "publishes acked on both lanes with the node down",
      });
      expect((await nodeOfGateway()).name).not.toBe(chatNode.name);
      await chatNode.restart();
    });
    expect(await leaderOf(DEFAULT)).toBe(defaultLeader);
    const { held, durableRepeats } = await expectEveryMessageOnce(chat);
    const otherResult = await expectEveryMessageOnce(other);
    console.log(
      `namespaces-cluster-kill-gateway-node ${JSON.stringify({ victim: chatNode.name, chat: held.length, other: otherResult.held.length, chatFailures: chat.pub.failures.length, otherFailures: other.pub.failures.length, chatAckGapMs: chat.pub.maxGap(), otherAckGapMs: other.pub.maxGap(), chatDurableRepeats: durableRepeats, otherDurableRepeats: otherResult.durableRepeats })}`,
    );
  }, 180_000);
});

describe("namespaces on a 3-node cluster — a namespace added while a node is down", () => {
  it("namespaces cluster — a gateway started with a new R3 namespace while a node is down and restarting becomes ready, and serves the namespace", async () => {
    const meta = await cluster.waitForMetaLeader();
    const victim = cluster.nodes.find((x) => x.name !== meta)!;
    await victim.kill();
    await cluster.waitForMetaLeader();
    const file = join(dir, "added.yaml");
    writeFileSync(file, "namespaces:\n  chat:\n    replicas: 3\n  alerts:\n    replicas: 3\n");
    let second: GatewayHandle | undefined;
    const starting = startGateway({
      natsUrl: cluster.urls.filter((_, i) => cluster.nodes[i] !== victim),
      workers: 1,
      logLevel: "info",
      readyTimeoutMs: 60_000,
      args: ["--stream-replicas", "3", "--shutdown-timeout", "5s"],
      env: { NAMESPACES_FILE: file },
    }).then((g) => (second = g));
    try {
      // Its primary connected (the first gateway's is the other one): it asks for FANOUT_CHANNELS_ALERTS next, with two
      // nodes up (a create that times out, or JetStream finding no peers to place it on). Then the third comes back.
      await waitFor(
        async () => {
          let primaries = 0;
          for (const x of cluster.nodes.filter((y) => y.running)) {
            const z = await getJson<{ connections?: Array<{ name?: string }> }>(`http://127.0.0.1:${x.monitorPort}/connz?limit=1024`);
            primaries += z?.connections?.filter((c) => c.name === "fanout-gateway-primary").length ?? 0;
          }
          return second !== undefined || primaries >= 2 || undefined;
        },
        { timeoutMs: 20_000, what: "the second gateway's primary connected" },
      );
      await victim.restart();
      await starting;
      const si = await info("FANOUT_CHANNELS_ALERTS");
      expect(si.config.num_replicas).toBe(3);
      const ch = uniq("alerts.x");
      const c = await TestClient.connect(second!.wsUrl);
      sockets.push(c);
      await c.sub(ch);
      const r = await fetch(`${second!.url}/v1/publish/${ch}`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
      expect(r.status).toBe(201);
      expect((await c.waitForMsgs(1))[0]!.channel).toBe(ch);
    } finally {
      if (victim.running === false) await victim.restart();
      await starting.catch(() => undefined);
      await second?.stop();
    }
  }, 120_000);
});
