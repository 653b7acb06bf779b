// pub-cluster's real CLI against a real redis-server and nats-server (core and JetStream).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { startRedisServer, type RedisServerHandle } from "#testkit/redis-server.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { waitFor } from "#testkit/wait.js";
import { buildTools, PUB_CLI, runToEnd } from "../../subtools/test/support/tools.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";

let redis: RedisServerHandle;
let nats: NatsServerHandle;

beforeAll(async () => {
  [redis, nats] = (await Promise.all([startRedisServer(), startNatsServer(), buildTools()])) as [RedisServerHandle, NatsServerHandle, void];
});
afterAll(async () => {
  await Promise.all([redis?.stop(), nats?.stop()]);
});

type Body = { p: string; s?: number; t?: number; x?: string; end?: boolean; total?: number };

describe("pub-cluster — publishing", () => {
  it("pub-cluster — Redis: numbered, timestamped, padded payloads per publisher, then an end marker with the total", async () => {
    const sub = new Redis({ port: redis.port });
    const got: { channel: string; raw: string }[] = [];
    sub.on("message", (channel: string, raw: string) => got.push({ channel, raw }));
    await sub.subscribe("pt.a", "pt.b");
    const before = performance.timeOrigin * 1000 + performance.now() * 1000;
    const { code, out } = await runToEnd(PUB_CLI, [
      "-t",
      "20",
      "-n",
      "4",
      "-c",
      "1",
      "-p",
      "3",
      "--target",
      "redis",
      "--port",
      String(redis.port),
      "--channel",
      "pt.a,pt.b",
      "--size",
      "200",
    ]);
    expect(code, out).toBe(0);
    await waitFor(() => got.length >= 14 || undefined, { what: "14 messages" });
    sub.disconnect();
    const bodies = got.map((g) => ({ channel: g.channel, raw: g.raw, b: JSON.parse(g.raw) as Body }));
    const data = bodies.filter((x) => !x.b.end);
    const ends = bodies.filter((x) => x.b.end);
    expect(data).toHaveLength(12);
    for (const ch of ["pt.a", "pt.b"]) {
      const mine = data.filter((d) => d.channel === ch);
      expect(mine.map((d) => d.b.s)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(new Set(mine.map((d) => d.b.p)).size).toBe(1);
      expect(mine[0]!.b.p.endsWith(`:${ch}`)).toBe(true);
      expect(ends.find((e) => e.channel === ch)?.b).toEqual({ p: mine[0]!.b.p, end: true, total: 6 });
    }
    for (const d of data) {
      expect(Buffer.byteLength(d.raw)).toBe(200);
      expect(d.b.t!).toBeGreaterThanOrEqual(Math.floor(before));
      expect(d.b.t!).toBeLessThan(before + 30_000_000);
    }
    expect(out).toContain("[  pub-master  ] \tPublished: 12 (acked 12, failed 0)");
    expect(out).toContain("End markers: 2");
  });

  it("pub-cluster — JetStream: acked publishes land in the gateway's stream under ev.<channel>", async () => {
    const nc = await connect({ servers: nats.url });
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "FANOUT_CHANNELS", subjects: ["ev.>"] });
    const { code, out } = await runToEnd(PUB_CLI, [
      "-t",
      "20",
      "-n",
      "2",
      "-c",
      "2",
      "-p",
      "5",
      "--target",
      "jetstream",
      "--port",
      String(nats.port),
      "--channel",
      "pt.js",
      "--sync",
      "--msg-id",
    ]);
    expect(code, out).toBe(0);
    const info = await jsm.streams.info("FANOUT_CHANNELS", { subjects_filter: ">" });
    expect(info.state.messages).toBe(2 * 5 * 2 + 2);
    expect(info.state.subjects).toEqual({ "ev.pt.js": 22 });
    expect(out).toContain("Published: 20 (acked 20, failed 0)");
    expect(out).toMatch(/\t ACK MEAN: [\d.]+ms/);
    await nc.close();
  });

  // Over HTTP the batches in flight travel on several keep-alive connections, so two of them may reach the
  // worker in either order (each batch is stored in its own order); over one WebSocket they are stored in
  // the order they were sent.
  it("pub-cluster — --batch N against the gateway: every publish stored once, and in order over a WebSocket", async () => {
    let gw: GatewayHandle | undefined;
    try {
      gw = await startGateway({ natsUrl: nats.url, workers: 1, args: ["--stream-name", "PTBATCH", "--subject-prefix", "ptb"] });
      for (const target of ["gateway-http", "gateway-ws"]) {
        const channel = `pt.batch.${target}`;
        const args = [
          "-t",
          "20",
          "-n",
          "25",
          "-p",
          "4",
          "--target",
          target,
          "--port",
          String(gw.port),
          "--channel",
          channel,
          "--batch",
          "10",
          "--msg-id",
          "--no-clock",
        ];
        const { code, out } = await runToEnd(PUB_CLI, args);
        expect(code, out).toBe(0);
        expect(out).toContain("Published: 100 (acked 100, failed 0)");
        const r = (await (await fetch(`${gw.url}/v1/channels/${channel}/messages?limit=1000`)).json()) as { messages: { data: Body }[] };
        const seqs = r.messages.filter((m) => !m.data.end).map((m) => m.data.s);
        const all = Array.from({ length: 100 }, (_, i) => i + 1);
        if (target === "gateway-ws") expect(seqs).toEqual(all);
        else expect([...seqs].sort((a, b) => a! - b!)).toEqual(all);
      }
    } finally {
      await gw?.stop();
    }
  });

  it("pub-cluster — refused publishes are counted as failed and the exit code says so", async () => {
    const { code, out } = await runToEnd(PUB_CLI, [
      "-t",
      "10",
      "-n",
      "2",
      "-p",
      "3",
      "--target",
      "jetstream",
      "--port",
      String(nats.port),
      "--subject-prefix",
      "nostream.",
      "--timeout",
      "2000",
    ]);
    expect(code).toBe(1);
    expect(out).toContain("Published: 6 (acked 0, failed 6)");
    expect(out).toContain("(1 failed)");
    expect(out).toMatch(/first error: /);
  });
});
