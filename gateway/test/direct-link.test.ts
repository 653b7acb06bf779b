// The direct-get connection of the gateway's own (DirectLink) against a real nats-server: the same answers as
// through nats.js, its replies really arriving on it, a cut link failing only what was on its wire and
// coming back, and a server refusing it (no credentials) leaving every read on the main connection.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startTcpProxy } from "#testkit/tcp-proxy.js";
import { waitFor } from "#testkit/wait.js";
import { DirectGet, type DirectBatch } from "../src/broker/jetstream/direct/direct-get.js";
import { DirectLink } from "../src/broker/jetstream/direct/direct-link.js";
import { GatewayError } from "../src/errors.js";
import { createLogger } from "../src/log.js";

let nats: NatsServerHandle;
let nc: NatsConnection;
const log = createLogger("silent", {});
const COUNT = 3_000;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: "DL", subjects: ["dl.>"], allow_direct: true });
  const js = jetstream(nc);
  for (let i = 0; i < COUNT; i += 500)
    await Promise.all(Array.from({ length: 500 }, (_, k) => js.publish(`dl.c${(i + k) % 3}`, JSON.stringify({ n: i + k, pad: "é".repeat((i + k) % 50) }))));
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

/** Reads every message of `subject` in pages of `batch`. */
async function readAll(dg: DirectGet, subject: string, batch = 700): Promise<DirectBatch["messages"]> {
  const out: DirectBatch["messages"] = [];
  for (let seq = 1; ;) {
    const b = await dg.batch({ seq, subject, batch, maxBytes: 64 * 1024 });
    out.push(...b.messages);
    if (b.pending === 0 || b.messages.length === 0) return out;
    seq = b.messages.at(-1)!.seq + 1;
  }
}

/** Messages the server sent to the connection named `name` (monitoring connz). */
async function sentTo(name: string): Promise<number> {
  const r = (await (await fetch(`http://127.0.0.1:${nats.monitorPort}/connz?limit=1000`)).json()) as { connections: { name?: string; out_msgs: number }[] };
  return r.connections.filter((c) => c.name === name).reduce((n, c) => n + c.out_msgs, 0);
}

const linked = (server: () => string, name: string, keep: { link?: DirectLink }) =>
  new DirectGet(nc, "DL", {
    fast: (sink) => {
      keep.link = new DirectLink({ server, name, sink, log, backoffMs: [50, 200] });
      keep.link.start();
      return keep.link;
    },
  });

describe("direct-get link", () => {
  it("direct link — the same messages as through nats.js, and the replies arrive on the link's own connection", async () => {
    const keep: { link?: DirectLink } = {};
    const dg = linked(() => nc.getServer(), "dl-test-same", keep);
    await waitFor(() => keep.link?.ready, { what: "link ready" });
    const viaLink = await readAll(dg, "dl.>");
    const plain = new DirectGet(nc, "DL");
    const viaNatsJs = await readAll(plain, "dl.>");
    expect(viaLink.length).toBe(COUNT);
    const view = (ms: typeof viaLink) => ms.map((m) => `${m.seq} ${m.subject} ${m.ts} ${Buffer.from(m.payload).toString("utf8")}`);
    expect(view(viaLink)).toEqual(view(viaNatsJs));
    expect(JSON.parse(Buffer.from(viaLink[7]!.payload).toString("utf8"))).toEqual({ n: 7, pad: "é".repeat(7) });
    // Pages of 700 within 64 KiB: each page's messages and its end-of-batch status came on the link.
    expect(await sentTo("dl-test-same")).toBeGreaterThanOrEqual(COUNT);
    // A filtered read and a status other than the end of a batch (nothing at or after the seq).
    expect((await readAll(dg, "dl.c1")).map((m) => m.seq)).toEqual(viaLink.filter((m) => m.subject === "dl.c1").map((m) => m.seq));
    expect(await dg.batch({ seq: COUNT + 10, subject: "dl.>", batch: 10 })).toEqual({ messages: [], pending: 0 });
    dg.close();
    plain.close();
    expect(keep.link!.state).toBe("closed");
  });

  it("direct link — a cut link fails only the reads on its wire (temporary), the next go through nats.js, and it comes back", async () => {
    const proxy = await startTcpProxy({ host: "127.0.0.1", port: nats.port });
    const keep: { link?: DirectLink } = {};
    const dg = linked(() => `127.0.0.1:${proxy.port}`, "dl-test-cut", keep);
    await waitFor(() => keep.link?.ready, { what: "link ready" });
    // Many small pages in flight on the link; the cut lands while they are answered.
    const reads = Array.from({ length: 8 }, (_, i) =>
      dg.batch({ seq: 1 + i * 300, subject: "dl.>", batch: 300 }).then(
        (b) => b,
        (e: unknown) => e,
      ),
    );
    expect(proxy.cut()).toBe(1);
    const results = await Promise.all(reads);
    const failed = results.filter((r) => r instanceof GatewayError);
    expect(failed.length).toBeGreaterThan(0);
    for (const e of failed) expect(e).toMatchObject({ code: "broker_unavailable", temporary: true });
    for (const r of results) if (!(r instanceof GatewayError)) expect((r as DirectBatch).messages).toHaveLength(300);
    // While the link is down, reads are answered through the main connection.
    expect(keep.link!.ready).toBe(false);
    expect((await dg.batch({ seq: 1, subject: "dl.>", batch: 50 })).messages).toHaveLength(50);
    await waitFor(() => keep.link!.ready && keep.link!.connects === 2, { what: "link back" });
    const before = await sentTo("dl-test-cut");
    expect((await readAll(dg, "dl.c2")).length).toBe(COUNT / 3);
    expect((await sentTo("dl-test-cut")) - before).toBeGreaterThanOrEqual(COUNT / 3);
    dg.close();
    await proxy.close();
  });

  it("direct link — a server that asks for credentials the link was not given: it never gets ready and reads use nats.js", async () => {
    const locked = await startNatsServer({ extraArgs: ["--user", "u", "--pass", "p"] });
    try {
      const keep: { link?: DirectLink } = {};
      const dg = linked(() => `127.0.0.1:${locked.port}`, "dl-test-auth", keep);
      await waitFor(() => (keep.link?.attempts ?? 0) >= 2, { what: "two refused attempts" });
      expect((await readAll(dg, "dl.c0")).length).toBe(COUNT / 3);
      expect(keep.link!.connects).toBe(0);
      dg.close();
    } finally {
      await locked.stop();
    }
  });
});
