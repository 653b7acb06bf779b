import { connect, type NatsConnection } from "@nats-io/transport-node";
import { DeliverPolicy, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PullReader, READER_PREFIX, type PullReaderOptions } from "../src/broker/pull-reader.js";
import type { BrokerMessage } from "../src/broker/broker.js";
import { createLogger } from "../src/log.js";
import { SubjectMapper } from "../src/protocol/channel.js";
import { startNatsServer, type NatsServerHandle } from "./support/nats-server.js";
import { waitFor } from "./support/wait.js";

let nats: NatsServerHandle;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
const mapper = new SubjectMapper("pr");
const log = createLogger("silent", {});
let n = 0;
const uniq = () => `c${++n}`;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: "PR", subjects: ["pr.>"] });
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

async function publish(subject: string, count: number): Promise<number[]> {
  const seqs: number[] = [];
  for (let i = 0; i < count; i += 500) {
    const acks = await Promise.all(Array.from({ length: Math.min(500, count - i) }, (_, k) => js.publish(subject, `{"i":${i + k}}`)));
    seqs.push(...acks.map((a) => a.seq));
  }
  return seqs;
}

const readerNames = async () => (await jsm.consumers.list("PR").next()).map((c) => c.name).filter((name) => name.startsWith(READER_PREFIX));

function options(pattern: string, windowBytes = 65_536): PullReaderOptions {
  return { nc, jsm, stream: "PR", subject: mapper.toSubject(pattern), toChannel: (s) => mapper.toChannel(s), position: { deliver_policy: DeliverPolicy.All }, windowBytes, maxMessages: 1_024, log };
}

type Got = { m: BrokerMessage; pending: number };

describe("pull reader — catch-up reads on a core subscription", () => {
  it("pull reader — every matching message in order, with seq, broker time and pending taken from the reply subject", async () => {
    const a = uniq();
    const t0 = Date.now();
    const [mine, other] = await Promise.all([publish(`pr.${a}.x`, 3_000), publish(`pr.${a}other.x`, 1_000)]);
    const t1 = Date.now();
    const got: Got[] = [];
    const r = await PullReader.open(options(`${a}.*`), { onMessage: (m, pending) => got.push({ m, pending }), onLost: (e) => { throw e; } });
    expect(r.initialPending).toBe(3_000);
    await waitFor(() => got.length >= 3_000, { what: "3000 messages" });
    await r.stop();
    expect(got.map((g) => g.m.seq)).toEqual(mine);
    expect(got.some((g) => other.includes(g.m.seq))).toBe(false);
    expect(got.map((g) => g.pending)).toEqual(mine.map((_, i) => 2_999 - i));
    expect(got[0]!.m.channel).toBe(`${a}.x`);
    expect(JSON.parse(Buffer.from(got[1_234]!.m.payload).toString())).toEqual({ i: 1_234 });
    for (const g of got) {
      expect(g.m.ts).toBeGreaterThanOrEqual(t0 - 1);
      expect(g.m.ts).toBeLessThanOrEqual(t1 + 1);
    }
    // The broker's own timestamp, to the microsecond.
    const iso = (await jsm.streams.getMessage("PR", { seq: mine[17]! }))!.timestamp;
    const micros = Number((/\.(\d+)Z$/.exec(iso)?.[1] ?? "").padEnd(6, "0").slice(3, 6));
    expect(got[17]!.m.ts).toBeCloseTo(Date.parse(iso) + micros / 1_000, 2);
    expect(await readerNames()).toEqual([]);
  });

  it("pull reader — paused, it receives at most its window; resumed, it reads on without a gap or a repeat", async () => {
    const a = uniq();
    const seqs = await publish(`pr.${a}`, 2_000);
    const got: number[] = [];
    let r: PullReader | undefined;
    r = await PullReader.open(options(a, 4_096), {
      onMessage: (m) => {
        got.push(m.seq);
        if (got.length === 1) r?.pause();
      },
      onLost: (e) => { throw e; },
    });
    r.pause();
    const [name] = await readerNames();
    // Quiet once the server has no open request left and everything it delivered has arrived.
    await waitFor(async () => {
      const ci = await jsm.consumers.info("PR", name!);
      return ci.num_waiting === 0 && ci.delivered.consumer_seq === got.length;
    }, { what: "paused reader quiet" });
    expect(got.length).toBeGreaterThan(0);
    expect(got.length).toBeLessThanOrEqual(16); // 4 KiB window of ~1 KiB guesses, at least 16 messages
    r.resume();
    await waitFor(() => got.length >= 2_000, { what: "the rest after resume" });
    await r.stop();
    expect(got).toEqual(seqs);
  });

  it("pull reader — a consumer deleted under it is reported through onLost, and the reader stops", async () => {
    const a = uniq();
    await publish(`pr.${a}`, 500);
    let lost: Error | undefined;
    const got: number[] = [];
    const r = await PullReader.open(options(a, 2_048), { onMessage: (m) => got.push(m.seq), onLost: (e) => { lost = e; } });
    r.pause();
    const [name] = await readerNames();
    await jsm.consumers.delete("PR", name!);
    r.resume();
    await waitFor(() => lost, { what: "onLost" });
    expect(String(lost)).toMatch(/40[49]|503|no responders|deleted/i);
    expect(got.length).toBeLessThan(500);
  });

  it("pull reader — a stream without matches gives initialPending 0 and stop() leaves no consumer behind", async () => {
    const r = await PullReader.open(options(uniq()), { onMessage: () => { throw new Error("no message expected"); }, onLost: (e) => { throw e; } });
    expect(r.initialPending).toBe(0);
    expect(await readerNames()).toHaveLength(1);
    await r.stop();
    expect(await readerNames()).toEqual([]);
  });
});
