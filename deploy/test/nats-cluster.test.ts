// The local 3-node JetStream cluster (deploy/nats/cluster/node.conf) as the tests and the bench start it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, StorageType, type JetStreamClient, type PubAck } from "@nats-io/jetstream";
import { startNatsCluster, type NatsCluster } from "#testkit/nats-cluster.js";
import { waitFor } from "#testkit/wait.js";

type StreamDetail = { name: string; state: { messages: number; last_seq: number } };
type Jsz = { meta_cluster?: { leader?: string; cluster_size?: number }; account_details?: Array<{ stream_detail?: StreamDetail[] }> };

async function jsz(port: number, query = ""): Promise<Jsz> {
  const r = await fetch(`http://127.0.0.1:${port}/jsz${query}`);
  return (await r.json()) as Jsz;
}

/** Publishes with a message id, retrying while a leader election is under way; bounded by `deadlineMs`. */
async function publishAcked(js: JetStreamClient, subject: string, msgID: string, deadlineMs: number): Promise<PubAck> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    try {
      return await js.publish(subject, msgID, { msgID, timeout: 2_000 });
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

describe("nats cluster", () => {
  let cluster: NatsCluster;
  let nc: NatsConnection;

  beforeAll(async () => {
    cluster = await startNatsCluster();
    nc = await connect({ servers: cluster.urls, reconnectTimeWait: 100, maxReconnectAttempts: -1 });
  });

  afterAll(async () => {
    await nc?.close();
    await cluster?.stop();
  });

  it("cluster — forms with 3 nodes and one meta leader all nodes agree on", async () => {
    const leader = await cluster.waitForMetaLeader();
    expect(cluster.nodes.map((n) => n.name)).toContain(leader);
    for (const n of cluster.nodes) {
      const z = await jsz(n.monitorPort);
      expect(z.meta_cluster?.leader).toBe(leader);
      expect(z.meta_cluster?.cluster_size).toBe(3);
    }
  });

  it("R3 file stream — is created with 3 replicas and acknowledges publishes", async () => {
    // Creating an R3 stream on a freshly formed cluster can outlast the API's default 5 s under the full suite's
    // load; an add that timed out may still have created it, and adding the same config again answers its info.
    const jsm = await jetstreamManager(nc, { timeout: 15_000 });
    const info = await waitFor(() => jsm.streams.add({ name: "R3A", subjects: ["r3a.>"], storage: StorageType.File, num_replicas: 3 }), {
      timeoutMs: 45_000,
      intervalMs: 250,
      what: "R3A created",
    });
    expect(info.config.num_replicas).toBe(3);
    // A new R3 stream answers once its leader is elected and its interest has reached this client's node:
    // until then a publish gets "no responders" (seen under load in the full suite).
    const js = jetstream(nc);
    await waitFor(async () => ((await jsm.streams.info("R3A")).cluster?.leader ? true : undefined), { timeoutMs: 20_000, what: "R3A leader" });
    for (let i = 0; i < 20; i++) {
      const ack = await waitFor(() => js.publish(`r3a.${i % 4}`, `m${i}`, { msgID: `r3a-${i}` }).catch(() => undefined), {
        timeoutMs: 20_000,
        what: `publish ${i}`,
      });
      expect(ack.seq).toBe(i + 1);
    }
    const si = await jsm.streams.info("R3A");
    expect(si.state.messages).toBe(20);
    expect(si.cluster?.leader).toBeTruthy();
    expect(si.cluster?.replicas?.length).toBe(2);
  });

  it("SIGKILL of the stream leader — publishes stay acknowledged, and the node rejoins with every message after restart", async () => {
    const jsm = await jetstreamManager(nc, { timeout: 15_000 });
    const r3b = { name: "R3B", subjects: ["r3b.>"], storage: StorageType.File, num_replicas: 3, duplicate_window: 60_000_000_000 };
    await waitFor(() => jsm.streams.add(r3b), { timeoutMs: 45_000, intervalMs: 250, what: "R3B created" });
    const js = jetstream(nc);
    for (let i = 0; i < 10; i++) await publishAcked(js, "r3b.before", `before-${i}`, 10_000);

    const leaderName = (await jsm.streams.info("R3B")).cluster!.leader!;
    const victim = cluster.nodes.find((n) => n.name === leaderName)!;
    await victim.kill();
    expect(victim.running).toBe(false);

    const seqs = new Set<number>();
    for (let i = 0; i < 30; i++) {
      const ack = await publishAcked(js, "r3b.during", `during-${i}`, 20_000);
      seqs.add(ack.seq);
    }
    expect(seqs.size).toBe(30);
    const during = await jsm.streams.info("R3B");
    expect(during.state.messages).toBe(40);
    expect(during.cluster?.leader).not.toBe(leaderName);

    await victim.restart();
    const caughtUp = await waitFor(
      async () => {
        const z = await jsz(victim.monitorPort, "?accounts=true&streams=true");
        const s = z.account_details?.flatMap((a) => a.stream_detail ?? []).find((d) => d.name === "R3B");
        return s && s.state.messages === 40 ? s : undefined;
      },
      { timeoutMs: 20_000, what: "restarted node holding all 40 messages of R3B" },
    );
    expect(caughtUp.state.last_seq).toBe(40);
    await waitFor(
      async () => {
        const si = await jsm.streams.info("R3B");
        const replicas = si.cluster?.replicas ?? [];
        return (replicas.length === 2 && replicas.every((r) => r.current && !r.offline)) || undefined;
      },
      { timeoutMs: 20_000, what: "every R3B replica current again" },
    );
  });
});
