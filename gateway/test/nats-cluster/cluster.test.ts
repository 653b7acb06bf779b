// The gateway on a real 3-node JetStream cluster (deploy/nats/cluster/node.conf): an R3 stream, kill -9 of a
// node under publish load with zero acknowledged messages lost, and two gateway instances sharing the cluster.
// Measurements (publish rate, failing window, delivery gaps) are printed as one JSON line per case.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamManager, type StreamInfo } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getJson, startNatsCluster, type NatsCluster, type NatsClusterNode } from "#testkit/nats-cluster.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish, TestClient, type MsgFrame } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";

const STREAM = "FANOUT_CHANNELS";
let cluster: NatsCluster;
let nc: NatsConnection;
let jsm: JetStreamManager;
const gateways: GatewayHandle[] = [];
const sockets: TestClient[] = [];
let n = 0;
const uniq = (base: string) => `${base}${++n}`;

async function gateway(): Promise<GatewayHandle> {
  const gw = await startGateway({ natsUrl: cluster.urls, workers: 1, logLevel: "info", args: ["--stream-replicas", "3", "--shutdown-timeout", "5s"] });
  gateways.push(gw);
  return gw;
}

async function socket(url: string): Promise<TestClient> {
  const c = await TestClient.connect(url);
  sockets.push(c);
  return c;
}

/** The cluster node holding the gateway worker's NATS connection (connz on each running node). */
async function nodeOfGateway(): Promise<NatsClusterNode> {
  return waitFor(
    async () => {
      for (const node of cluster.nodes.filter((x) => x.running)) {
        const z = await getJson<{ connections?: Array<{ name?: string }> }>(`http://127.0.0.1:${node.monitorPort}/connz?limit=1024`);
        if (z?.connections?.some((c) => c.name?.startsWith("fanout-gateway-worker"))) return node;
      }
      return undefined;
    },
    { timeoutMs: 10_000, what: "the node the gateway worker is connected to" },
  );
}

async function streamInfo(): Promise<StreamInfo> {
  return waitFor(() => jsm.streams.info(STREAM), { timeoutMs: 20_000, what: "stream info" });
}

/** The stream as one node stores it (its own /jsz), to see that a restarted replica holds everything. */
async function nodeStreamState(node: NatsClusterNode): Promise<{ messages: number; last_seq: number } | undefined> {
  type Jsz = { account_details?: Array<{ stream_detail?: Array<{ name: string; state: { messages: number; last_seq: number } }> }> };
  const z = await getJson<Jsz>(`http://127.0.0.1:${node.monitorPort}/jsz?accounts=true&streams=true`);
  return z?.account_details?.flatMap((a) => a.stream_detail ?? []).find((d) => d.name === STREAM)?.state;
}

/** Polls until every replica is current with no lag and the node itself holds the stream's last seq. */
async function waitCaughtUp(node: NatsClusterNode, timeoutMs: number): Promise<{ ms: number; info: StreamInfo }> {
  const t0 = Date.now();
  const info = await waitFor(
    async () => {
      const si = await jsm.streams.info(STREAM);
      const replicas = si.cluster?.replicas ?? [];
      if (!si.cluster?.leader || replicas.length !== 2 || !replicas.every((r) => r.current && !r.offline && !r.lag)) return undefined;
      const own = await nodeStreamState(node);
      return own && own.last_seq === si.state.last_seq && own.messages === si.state.messages ? si : undefined;
    },
    { timeoutMs, intervalMs: 100, what: `${node.name} caught up with every replica current and lag 0` },
  );
  return { ms: Date.now() - t0, info };
}

/**
 * A subscriber that survives its socket: live from the start, and on an unexpected close it reconnects (to the
 * next URL in its list) and resumes with from:{seq:last+1}. Records arrival times for the delivery-gap figure.
 */
class ResumingSubscriber {
  readonly seqs: number[] = [];
  readonly arrivals: number[] = [];
  resumes = 0;
  closeCodes: number[] = [];
  private client?: TestClient;
  private stopped = false;
  private urlIndex = 0;

  private constructor(
    private readonly urls: string[],
    readonly channel: string,
  ) {}

  static async start(urls: string[], channel: string): Promise<ResumingSubscriber> {
    const s = new ResumingSubscriber(urls, channel);
    await s.open(undefined);
    return s;
  }

  get last(): number {
    return this.seqs.at(-1) ?? 0;
  }

  private async open(from: number | undefined): Promise<void> {
    const c = await socket(this.urls[this.urlIndex % this.urls.length]!);
    c.ws.on("message", (d: Buffer) => {
      const f = JSON.parse(d.toString()) as MsgFrame;
      if (f.op !== "msg") return;
      this.seqs.push(f.seq);
      this.arrivals.push(Date.now());
    });
    c.ws.once("close", (code: number) => {
      this.closeCodes.push(code);
      if (!this.stopped) void this.resume();
    });
    this.client = c;
    await c.sub(this.channel, from === undefined ? {} : { from: { seq: from } });
  }

  private async resume(): Promise<void> {
    for (let attempt = 0; attempt < 50 && !this.stopped; attempt++) {
      this.urlIndex++;
      try {
        this.resumes++;
        await this.open(this.last + 1);
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 100)); // reconnect backoff, as a real client's
      }
    }
  }

  /** Largest pause between two consecutive messages, in ms, counting from the last message before `since`. */
  maxGap(since = 0): number {
    let gap = 0;
    for (let i = 1; i < this.arrivals.length; i++) {
      if (this.arrivals[i]! >= since) gap = Math.max(gap, this.arrivals[i]! - this.arrivals[i - 1]!);
    }
    return gap;
  }

  stop(): void {
    this.stopped = true;
    this.client?.close();
  }
}

type PublishRecord = { key: string; seq: number; firstTry: number; acked: number; failures: number };

/**
 * A closed-loop publisher: `concurrency` loops, each publishing its next message and waiting for the ack, with a
 * unique idempotency key per message; a failed publish (503, 502, timeout, err frame) is retried with the same key.
 * Bounded by `maxMessages` and `maxMs`; stop() ends it after the in-flight publishes.
 */
class LoadPublisher {
  readonly acked: PublishRecord[] = [];
  readonly failures: Array<{ at: number; what: string }> = [];
  readonly gaveUp: string[] = [];
  private next = 0;
  private stopped = false;
  private done: Promise<void>;
  readonly startedAt = Date.now();

  constructor(
    private readonly send: (key: string, i: number) => Promise<{ seq: number } | { error: string }>,
    private readonly opts: { concurrency: number; maxMessages: number; maxMs: number; retryForMs: number },
  ) {
    this.done = Promise.all(Array.from({ length: opts.concurrency }, () => this.loop())).then(() => undefined);
  }

  private async loop(): Promise<void> {
    while (!this.stopped && this.next < this.opts.maxMessages && Date.now() - this.startedAt < this.opts.maxMs) {
      const i = this.next++;
      const key = `${process.pid}-${this.startedAt}-${i}`;
      const firstTry = Date.now();
      let failures = 0;
      for (;;) {
        let r: { seq: number } | { error: string };
        try {
          r = await this.send(key, i);
        } catch (e) {
          r = { error: String((e as Error).message ?? e) };
        }
        if ("seq" in r) {
          this.acked.push({ key, seq: r.seq, firstTry, acked: Date.now(), failures });
          break;
        }
        failures++;
        this.failures.push({ at: Date.now(), what: r.error });
        if (Date.now() - firstTry > this.opts.retryForMs) {
          this.gaveUp.push(key);
          break;
        }
        await new Promise((res) => setTimeout(res, 50)); // retry backoff
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
  }

  /** Acked publishes per second over [from, to]. */
  rate(from: number, to: number): number {
    const k = this.acked.filter((a) => a.acked >= from && a.acked <= to).length;
    return Math.round((k * 1000) / Math.max(1, to - from));
  }
}

const httpSender = (gw: GatewayHandle, channel: string) => async (key: string, i: number) => {
  const r = await fetch(`${gw.url}/v1/publish/${channel}`, {
    method: "POST",
    body: JSON.stringify({ i }),
    headers: { "content-type": "application/json", "idempotency-key": key },
    signal: AbortSignal.timeout(15_000),
  });
  const body = (await r.json()) as { seq?: number; error?: string };
  return r.status === 201 && typeof body.seq === "number" ? { seq: body.seq } : { error: `${r.status} ${body.error ?? ""}` };
};

const wsSender = (c: TestClient, channel: string) => async (key: string, i: number) => {
  const r = await c.request({ op: "pub", channel, data: { i }, msgId: key }, 15_000);
  return r.op === "ok" && typeof r.seq === "number" ? { seq: r.seq } : { error: `${String(r.code)}` };
};

/** Polls /readyz every 25 ms (bounded) and keeps the answers, to tell when and for how long it was not 200. */
function watchReadyz(gw: GatewayHandle) {
  const samples: Array<{ at: number; status: number }> = [];
  let stopped = false;
  void (async () => {
    for (let i = 0; i < 4_000 && !stopped; i++) {
      let status = 0;
      try {
        status = (await fetch(`${gw.url}/readyz`, { signal: AbortSignal.timeout(1_000) })).status;
      } catch {
        status = 0;
      }
      samples.push({ at: Date.now(), status });
      await new Promise((r) => setTimeout(r, 25));
    }
  })();
  return {
    stop: () => {
      stopped = true;
    },
    /** ms from `t` to the first 200 at or after it. */
    firstOkAfter: (t: number) => (samples.find((x) => x.at >= t && x.status === 200)?.at ?? Infinity) - t,
    /** Answers other than 200 after `t`, as [ms after t, status]. */
    notOkAfter: (t: number) => samples.filter((x) => x.at >= t && x.status !== 200).map((x) => [x.at - t, x.status]),
    last: () => samples.at(-1)?.status,
  };
}

beforeAll(async () => {
  cluster = await startNatsCluster();
  nc = await connect({ servers: cluster.urls, name: "cluster-test", reconnectTimeWait: 100, maxReconnectAttempts: -1 });
  jsm = await jetstreamManager(nc, { timeout: 5_000 });
});

afterAll(async () => {
  for (const c of sockets) c.close();
  await Promise.all(gateways.map((g) => g.stop()));
  await nc?.close();
  await cluster?.stop();
});

describe("cluster — R3 stream on three nodes", () => {
  let gw: GatewayHandle;
  beforeAll(async () => {
    gw = await gateway();
  });

  it("gateway with three NATS URLs — creates an R3 stream, and clients receive HTTP and WS publishes", async () => {
    const si = await streamInfo();
    expect(si.config.num_replicas).toBe(3);
    expect(si.cluster?.leader).toBeTruthy();
    expect(si.cluster?.replicas?.length).toBe(2);
    expect(si.cluster?.replicas?.every((r) => !r.offline)).toBe(true);
    expect(new Set([si.cluster!.leader, ...si.cluster!.replicas!.map((r) => r.name)])).toEqual(new Set(cluster.nodes.map((x) => x.name)));

    const ch = uniq("r3.basic");
    const a = await socket(gw.wsUrl);
    const b = await socket(gw.wsUrl);
    await a.sub(ch);
    await b.sub(ch);
    const viaHttp = await httpPublish(gw.url, ch, { via: "http" });
    expect(viaHttp.status).toBe(201);
    const viaWs = await b.request({ op: "pub", channel: ch, data: { via: "ws" } });
    expect(viaWs).toMatchObject({ op: "ok", duplicate: false });
    for (const c of [a, b]) {
      await c.waitForMsgs(2);
      expect(c.msgs.map((m) => [m.seq, m.data])).toEqual([
        [viaHttp.body.seq, { via: "http" }],
        [viaWs.seq, { via: "ws" }],
      ]);
    }
    expect((await fetch(`${gw.url}/readyz`)).status).toBe(200);
  });
});

type KillCase = { name: string; via: "http" | "ws"; victim: "stream leader" | "gateway's node"; leaderOnGatewayNode: boolean };

/**
 * Moves the stream leader until it is (or is not) on the node the gateway is connected to: a leader stepdown
 * naming a preferred node, repeated a few times since the election may still pick another.
 */
async function arrangeLeader(onGatewayNode: boolean): Promise<{ leader: NatsClusterNode; gwNode: NatsClusterNode }> {
  for (let attempt = 0; attempt < 8; attempt++) {
    const si = await streamInfo();
    const gwNode = await nodeOfGateway();
    const leader = cluster.nodes.find((x) => x.name === si.cluster?.leader);
    if (leader && (leader === gwNode) === onGatewayNode) return { leader, gwNode };
    const preferred = onGatewayNode ? gwNode : cluster.nodes.find((x) => x !== gwNode && x !== leader)!;
    await nc
      .request(`$JS.API.STREAM.LEADER.STEPDOWN.${STREAM}`, JSON.stringify({ placement: { preferred: preferred.name } }), { timeout: 5_000 })
      .catch(() => undefined);
    await waitFor(
      async () => {
        const now = (await jsm.streams.info(STREAM)).cluster;
        return now?.leader && now.leader !== leader?.name && (now.replicas ?? []).every((r) => r.current) ? true : undefined;
      },
      { timeoutMs: 15_000, what: "a new stream leader after the stepdown" },
    );
  }
  throw new Error(`could not place the stream leader ${onGatewayNode ? "on" : "off"} the gateway's node`);
}

/**
 * kill -9 of one node under a steady publish load: every acknowledged publish reaches every subscriber, the
 * gateway keeps (or regains) its broker connection, and the node catches up after restart.
 */
async function killUnderLoad(gw: GatewayHandle, kc: KillCase): Promise<Record<string, unknown>> {
  const ch = uniq(`kill.${kc.via}.`);
  // Placed before the load, so that the stepdown's own pause is not counted as the kill's.
  const { leader, gwNode } = await arrangeLeader(kc.leaderOnGatewayNode);
  const metaLeader = await cluster.waitForMetaLeader();
  const subs = await Promise.all([0, 1, 2].map(() => ResumingSubscriber.start([gw.wsUrl], ch)));
  const pubSocket = kc.via === "ws" ? await socket(gw.wsUrl) : undefined;
  const pub = new LoadPublisher(pubSocket ? wsSender(pubSocket, ch) : httpSender(gw, ch), {
    concurrency: 2,
    maxMessages: 20_000,
    maxMs: 45_000,
    retryForMs: 25_000,
  });
  try {
    await waitFor(() => pub.acked.length >= 300 || undefined, { timeoutMs: 15_000, what: "300 acks before the kill" });
    expect((await nodeOfGateway()).name).toBe(gwNode.name);
    const victim = kc.victim === "stream leader" ? leader : gwNode;
    const readyz = watchReadyz(gw);
    const killedAt = Date.now();
    await victim.kill();
    const ackedAtKill = pub.acked.length;

    // Publishing recovers, the gateway is connected to a surviving node and ready.
    await waitFor(() => pub.acked.filter((a) => a.firstTry > killedAt).length >= 300 || undefined, {
      timeoutMs: 30_000,
      what: "300 publishes acked after the kill",
    });
    const recoveredAt = Date.now();
    // The broker connection is on a survivor (or never left one), and /readyz says so within a bound.
    const readyzOkMs = readyz.firstOkAfter(killedAt);
    expect(readyzOkMs).toBeLessThan(5_000);
    const after = await streamInfo();
    expect(after.cluster?.leader).not.toBe(victim.name);
    expect(after.cluster?.replicas?.find((r) => r.name === victim.name)?.offline ?? true).toBe(true);
    const gwNodeAfter = await nodeOfGateway();
    expect(gwNodeAfter.name).not.toBe(victim.name);

    // Restart under load; then stop the load and let everything settle.
    await victim.restart();
    const restartedAt = Date.now();
    await waitFor(() => pub.acked.filter((a) => a.firstTry > restartedAt).length >= 100 || undefined, {
      timeoutMs: 20_000,
      what: "100 publishes acked after the restart",
    });
    await pub.stop();
    readyz.stop();
    const caught = await waitCaughtUp(victim, 30_000);
    expect(caught.info.cluster?.replicas?.map((r) => r.name)).toContain(victim.name);
    expect(caught.info.config.num_replicas).toBe(3);

    // Zero acknowledged messages lost: each subscriber has every acked seq, in order, once, and nothing else.
    expect(pub.gaveUp).toEqual([]);
    const acked = pub.acked.map((a) => a.seq).sort((x, y) => x - y);
    expect(new Set(acked).size).toBe(acked.length);
    for (const s of subs) {
      await waitFor(() => s.seqs.length >= acked.length || undefined, {
        timeoutMs: 20_000,
        what: `all ${acked.length} acked messages at a subscriber (has ${s.seqs.length})`,
      });
      expect(s.seqs).toEqual(acked);
      expect(s.arrivals.filter((t) => t > killedAt).length).toBeGreaterThan(0);
    }
    expect(readyz.last()).toBe(200);

    const failuresAround = pub.failures.filter((f) => f.at >= killedAt - 1_000);
    const afterKill = pub.acked
      .filter((a) => a.acked >= killedAt)
      .map((a) => a.acked)
      .sort((x, y) => x - y);
    let ackStall = 0;
    for (let i = 1; i < afterKill.length; i++) ackStall = Math.max(ackStall, afterKill[i]! - afterKill[i - 1]!);
    ackStall = Math.max(ackStall, (afterKill[0] ?? killedAt) - killedAt);
    const report = {
      case: kc.name,
      victim: victim.name,
      victimWas: { streamLeader: victim === leader, gatewayNode: victim === gwNode, metaLeader: victim.name === metaLeader },
      newLeader: after.cluster?.leader,
      gatewayNodeAfter: gwNodeAfter.name,
      messages: acked.length,
      ackedBeforeKill: ackedAtKill,
      ratePerSecBeforeKill: pub.rate(pub.startedAt, killedAt),
      ratePerSecOverall: pub.rate(pub.startedAt, Math.max(...pub.acked.map((a) => a.acked))),
      ratePerSecFirst5sAfterKill: pub.rate(killedAt, killedAt + 5_000),
      publishFailures: failuresAround.length,
      publishFailureCodes: [...new Set(failuresAround.map((f) => f.what))],
      failingWindowMs: failuresAround.length ? failuresAround.at(-1)!.at - killedAt : 0,
      maxAckStallMs: ackStall,
      maxPublishLatencyMs: Math.max(...pub.acked.map((a) => a.acked - a.firstTry)),
      maxDeliveryGapMs: Math.max(...subs.map((s) => s.maxGap(killedAt))),
      subscriberResumes: subs.reduce((k, s) => k + s.resumes, 0),
      liveFeed: gw.logs
        .filter((l) => /^live feed/.test(String(l.msg)) && Date.parse(String(l.time)) >= killedAt)
        .map((l) => `${Date.parse(String(l.time)) - killedAt}ms ${String(l.msg)}`),
      readyzOkMsAfterKill: readyzOkMs,
      readyzNotOkAfterKill: readyz.notOkAfter(killedAt),
      recoveredMs: recoveredAt - killedAt,
      catchUpMs: caught.ms,
    };
    console.log(`cluster-failover ${JSON.stringify(report)}`);
    return report;
  } finally {
    await pub.stop();
    for (const s of subs) s.stop();
  }
}

describe("cluster — kill -9 of a node under publish load", () => {
  let gw: GatewayHandle;
  beforeAll(async () => {
    gw = gateways[0] ?? (await gateway());
  });

  it("stream leader killed, gateway connected to another node — HTTP publishes retried with Idempotency-Key, 0 acknowledged lost, node catches up", async () => {
    const r = await killUnderLoad(gw, { name: "stream leader", via: "http", victim: "stream leader", leaderOnGatewayNode: false });
    expect(r.victimWas).toMatchObject({ streamLeader: true, gatewayNode: false });
  });

  // Regression: the live feed's ordered consumer sits on the node the gateway is connected to; when that node died,
  // nats.js never recreated it and every live subscriber of the worker stopped receiving, for good.
  it("node the gateway is connected to killed (not the leader) — broker connection fails over, live feeds resume, WS publishes with msgId, 0 lost", async () => {
    const r = await killUnderLoad(gw, { name: "gateway's node", via: "ws", victim: "gateway's node", leaderOnGatewayNode: false });
    expect(r.victimWas).toMatchObject({ streamLeader: false, gatewayNode: true });
  });

  it("stream leader killed, the gateway connected to it — publishes and live feeds recover on the survivors, 0 acknowledged lost", async () => {
    const r = await killUnderLoad(gw, { name: "stream leader + gateway's node", via: "http", victim: "stream leader", leaderOnGatewayNode: true });
    expect(r.victimWas).toMatchObject({ streamLeader: true, gatewayNode: true });
  });
});

describe("cluster — catch-up across a node failure", () => {
  // A catch-up reads pages with direct gets through the gateway's NATS connection. When the node it is
  // connected to dies mid-replay, page reads fail or time out while the connection fails over; they are
  // retried, and the client still gets every message once, in order, with nothing left on the server.
  it("the gateway's NATS node killed mid-replay — page reads retry on a survivor: every message once, in order", async () => {
    const gw = gateways[0] ?? (await gateway());
    const ch = uniq("failover-replay.");
    const total = 40_000;
    const js = jetstream(nc, { timeout: 10_000 });
    const enc = new TextEncoder();
    for (let i = 0; i < total; i += 500) {
      await Promise.all(Array.from({ length: Math.min(500, total - i) }, (_, k) => js.publish(`ev.${ch}`, enc.encode(`{"i":${i + k}}`))));
    }
    const c = await socket(gw.wsUrl);
    await c.sub(ch, { from: "all" });
    await c.waitForMsgs(500);
    const victim = await nodeOfGateway();
    expect(victim).toBeDefined();
    const atKill = c.msgs.length;
    await victim.kill();
    expect(atKill).toBeLessThan(total);
    try {
      await c.waitForMsgs(total, 90_000);
      await waitFor(() => c.frames.find((f) => f.op === "live"), { timeoutMs: 30_000, what: "live marker" });
      expect(c.msgs.length).toBe(total);
      expect(c.msgs.every((m, i) => (m.data as { i: number }).i === i)).toBe(true);
      expect(c.frames.filter((f) => f.op === "err")).toEqual([]);
      const count = (msg: string) => gw.logs.filter((l) => l.msg === msg).length;
      expect((await streamInfo()).state.consumer_count).toBe(0);
      console.log(
        `cluster-catchup-failover ${JSON.stringify({ victim: victim.name, receivedAtKill: atKill, total, readRetries: count("catch-up read failed; retrying") })}`,
      );
    } finally {
      await victim.restart();
      await waitCaughtUp(victim, 60_000);
    }
  }, 180_000);
});

describe("cluster — two gateway instances on one cluster", () => {
  let a: GatewayHandle;
  let b: GatewayHandle;
  beforeAll(async () => {
    [a, b] = await Promise.all([gateway(), gateway()]);
  });

  it("two instances — a message published through one reaches the clients of the other, both directions", async () => {
    expect(a.port).not.toBe(b.port);
    const ch = uniq("two.");
    const ca = await socket(a.wsUrl);
    const cb = await socket(b.wsUrl);
    await ca.sub(ch);
    await cb.sub(ch);
    const aToB = await httpPublish(a.url, ch, { via: "a-http" });
    expect(aToB.status).toBe(201);
    const bToA = await cb.request({ op: "pub", channel: ch, data: { via: "b-ws" } });
    expect(bToA).toMatchObject({ op: "ok", duplicate: false });
    const want = [
      [aToB.body.seq, { via: "a-http" }],
      [bToA.seq, { via: "b-ws" }],
    ];
    for (const c of [ca, cb]) {
      await c.waitForMsgs(2);
      expect(c.msgs.map((m) => [m.seq, m.data])).toEqual(want);
    }
  });

  it("two instances — after SIGTERM of one (close 1001) its client resumes on the other with from:{seq:last+1}, nothing lost or repeated", async () => {
    const ch = uniq("resume.");
    const sub = await ResumingSubscriber.start([a.wsUrl, b.wsUrl], ch);
    const pub = new LoadPublisher(httpSender(b, ch), { concurrency: 1, maxMessages: 5_000, maxMs: 20_000, retryForMs: 10_000 });
    try {
      await waitFor(() => sub.seqs.length >= 50 || undefined, { timeoutMs: 10_000, what: "50 messages on instance a" });
      expect(await a.stop("SIGTERM")).toBe(0);
      expect(sub.closeCodes[0]).toBe(1001);
      const stoppedAt = Date.now();
      await waitFor(() => (sub.resumes > 0 && sub.arrivals.some((t) => t > stoppedAt)) || undefined, {
        timeoutMs: 10_000,
        what: "messages on instance b after the resume",
      });
      const afterResume = pub.acked.length;
      await waitFor(() => pub.acked.length >= afterResume + 50 || undefined, { timeoutMs: 10_000, what: "50 more publishes after the resume" });
      await pub.stop();
      expect(pub.gaveUp).toEqual([]);
      const acked = pub.acked.map((x) => x.seq).sort((x, y) => x - y);
      await waitFor(() => sub.seqs.length >= acked.length || undefined, {
        timeoutMs: 10_000,
        what: `all ${acked.length} messages at the resumed client (has ${sub.seqs.length})`,
      });
      expect(sub.seqs).toEqual(acked);
      expect(sub.resumes).toBe(1);
      console.log(`cluster-two-instances ${JSON.stringify({ messages: acked.length, resumeGapMs: sub.maxGap(), closeCodes: sub.closeCodes })}`);
    } finally {
      await pub.stop();
      sub.stop();
    }
  });
});
