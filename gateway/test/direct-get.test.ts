// Batched direct gets against a real nats-server: the per-connection request window (a storm of catch-ups
// must not put every read on the wire at once) and urgent requests (live repairs) going ahead of queued ones.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { DirectGet } from "../src/broker/jetstream/direct/direct-get.js";
import { GatewayError } from "../src/errors.js";

let nats: NatsServerHandle;
let nc: NatsConnection;
const CHANNELS = 20;
const PER_CHANNEL = 30;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: "DG", subjects: ["dg.>"], allow_direct: true });
  const js = jetstream(nc);
  const acks = [];
  for (let i = 0; i < PER_CHANNEL; i++) for (let c = 0; c < CHANNELS; c++) acks.push(js.publish(`dg.c${c}`, `m${i}`));
  await Promise.all(acks);
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

describe("direct get — request window", () => {
  it("a storm of reads puts at most the window on the wire; the rest wait unsent and every read gets its whole answer", async () => {
    const dg = new DirectGet(nc, "DG", { maxInflight: 2 });
    const reads = Array.from({ length: CHANNELS }, (_, c) => dg.batch({ seq: 1, subject: `dg.c${c}`, batch: 1_000 }));
    expect(dg.queued).toBe(CHANNELS - 2);
    const batches = await Promise.all(reads);
    expect(dg.queued).toBe(0);
    for (const [c, b] of batches.entries()) {
      expect(b.messages.map((m) => new TextDecoder().decode(m.payload))).toEqual(Array.from({ length: PER_CHANNEL }, (_, i) => `m${i}`));
      expect(b.messages.every((m) => m.subject === `dg.c${c}`)).toBe(true);
      expect(b.pending).toBe(0);
    }
    dg.close();
  });

  it("urgent reads (live repairs) are sent before queued catch-up pages, in their own order", async () => {
    const dg = new DirectGet(nc, "DG", { maxInflight: 1 });
    const order: string[] = [];
    const track = (name: string, p: Promise<unknown>) => p.then(() => order.push(name));
    const all = [
      track("n0", dg.batch({ seq: 1, subject: "dg.c0", batch: 5 })),
      track("n1", dg.batch({ seq: 1, subject: "dg.c1", batch: 5 })),
      track("n2", dg.batch({ seq: 1, subject: "dg.c2", batch: 5 })),
      track("u1", dg.batch({ seq: 1, subject: "dg.c3", batch: 5, urgent: true })),
      track("u2", dg.batch({ seq: 1, subject: "dg.c4", batch: 5, urgent: true })),
    ];
    await Promise.all(all);
    // n0 was on the wire already; the urgent ones overtake n1 and n2.
    expect(order).toEqual(["n0", "u1", "u2", "n1", "n2"]);
    dg.close();
  });

  it("closing rejects the reads on the wire and the queued ones alike", async () => {
    const dg = new DirectGet(nc, "DG", { maxInflight: 1 });
    const reads = Array.from({ length: 4 }, (_, c) => dg.batch({ seq: 1, subject: `dg.c${c}`, batch: 1_000 }));
    dg.close();
    const settled = await Promise.allSettled(reads);
    expect(settled.map((s) => s.status)).toEqual(["rejected", "rejected", "rejected", "rejected"]);
  });

  it("queue bound — reads past it fail at once with a temporary broker_unavailable; urgent reads are never refused and still go first", async () => {
    const dg = new DirectGet(nc, "DG", { maxInflight: 1, maxQueued: 3 });
    const order: string[] = [];
    const track = (name: string, p: Promise<unknown>) => p.then(() => void order.push(name));
    const accepted = [0, 1, 2, 3].map((c) => track(`n${c}`, dg.batch({ seq: 1, subject: `dg.c${c}`, batch: 5 })));
    expect(dg.queued).toBe(3);
    const over = await dg.batch({ seq: 1, subject: "dg.c4", batch: 5 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(over).toBeInstanceOf(GatewayError);
    expect(over).toMatchObject({ code: "broker_unavailable", temporary: true });
    expect(dg.refused).toBe(1);
    // The queue is full of ordinary reads: repairs still get in, ahead of them.
    const urgent = [5, 6].map((c) => track(`u${c}`, dg.batch({ seq: 1, subject: `dg.c${c}`, batch: 5, urgent: true })));
    expect(dg.queued).toBe(5);
    await Promise.all([...accepted, ...urgent]);
    expect(order).toEqual(["n0", "u5", "u6", "n1", "n2", "n3"]);
    // Drained: ordinary reads are accepted again.
    await expect(dg.batch({ seq: 1, subject: "dg.c7", batch: 5 })).resolves.toMatchObject({ pending: 25 });
    dg.close();
  });
});
