import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish, type MsgFrame } from "#testkit/ws-client.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";
import { GatewayClient, type GatewayMessage } from "../client/src/index.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
let nc: NatsConnection;
let js: JetStreamClient;
const clients = new ClientPool(() => gw.wsUrl);
const client = () => clients.open();
const uniq = uniqueNames();

/** Publishes straight into JetStream (pipelined); returns the seqs. */
async function put(subjects: string[], value: (i: number) => unknown): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < subjects.length; i += 500) {
    const acks = await Promise.all(subjects.slice(i, i + 500).map((s, k) => js.publish(`ev.${s}`, JSON.stringify(value(i + k)))));
    for (const a of acks) out.push(a.seq);
  }
  return out;
}

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 1 });
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
});
afterAll(async () => {
  clients.closeAll();
  await nc?.close();
  await gw?.stop();
  await nats?.stop();
});

describe("last values — from:last_per_subject", () => {
  it("sends the newest message of every matching channel in stream order, then live", async () => {
    const p = uniq("prices");
    await put([`${p}.a`, `${p}.b`, `${p}.a`, `${p}.c`, `${p}.b`, `other${p}.a`], (i) => ({ i }));
    const c = await client();
    const ok = await c.sub(`${p}.*`, { from: "last_per_subject" });
    await waitFor(() => c.frames.find((f) => f.op === "live" && f.sub === `${p}.*`), { what: "live frame" });
    expect(c.msgs.map((m) => [m.channel, (m.data as { i: number }).i])).toEqual([
      [`${p}.a`, 2],
      [`${p}.c`, 3],
      [`${p}.b`, 4],
    ]);
    expect(c.msgs.at(-1)!.seq).toBeLessThanOrEqual(ok.lastSeq as number);
    await httpPublish(gw.url, `${p}.c`, { i: 9 });
    const msgs = await c.waitForMsgs(4);
    expect(msgs[3]).toMatchObject({ channel: `${p}.c`, data: { i: 9 } });
  });

  it("hands off to live with no gap and no duplicate while messages keep arriving", async () => {
    const p = uniq("hand");
    const channels = Array.from({ length: 20 }, (_, i) => `${p}.c${i}`);
    await put(channels, (i) => ({ i }));
    let stop = false;
    let k = 0;
    const published: Promise<number[]>[] = [];
    const pump = (async () => {
      while (!stop) {
        const p = put([channels[k % 20]!, channels[(k + 7) % 20]!], () => ({ i: ++k }));
        published.push(p);
        await p;
      }
    })();
    const c = await client();
    const ok = await c.sub(`${p}.>`, { from: "last_per_subject" });
    await waitFor(() => c.frames.find((f) => f.op === "live" && f.sub === `${p}.>`), { what: "live frame" });
    for (let i = 0; i < 20; i++) published.push(put([channels[i]!], () => ({ i: -1 })));
    stop = true;
    await pump;
    const seqs = (await Promise.all(published)).flat();
    const after = seqs.filter((s) => s > (ok.lastSeq as number));
    await waitFor(() => after.every((s) => c.msgs.some((m) => m.seq === s)), { timeoutMs: 20_000, what: "every message after the snapshot" });
    const got = c.msgs.map((m) => m.seq);
    expect(new Set(got).size).toBe(got.length); // no duplicate
    const snapshot = c.msgs.filter((m) => m.seq <= (ok.lastSeq as number));
    expect(new Set(snapshot.map((m) => m.channel)).size).toBe(snapshot.length); // one per channel
    expect(snapshot.length).toBe(20);
  });

  it("more than 1024 channels (multi_last refuses them): the gateway scans the stream instead", async () => {
    const p = uniq("many");
    const subjects = Array.from({ length: 1100 }, (_, i) => `${p}.d${i}`);
    await put(subjects, (i) => ({ i }));
    await put([`${p}.d5`], () => ({ i: "new" }));
    const c = await client();
    await c.sub(`${p}.*`, { from: "last_per_subject" });
    await waitFor(() => c.frames.find((f) => f.op === "live" && f.sub === `${p}.*`), { timeoutMs: 20_000, what: "live frame" });
    expect(c.msgs.length).toBe(1100);
    expect(c.msgs.at(-1)).toMatchObject({ channel: `${p}.d5`, data: { i: "new" } });
    const seqs = c.msgs.map((m: MsgFrame) => m.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  });

  it("a snapshot larger than a page (1 MiB) is paged: every channel arrives once, over WebSocket and over HTTP with next", async () => {
    const p = uniq("big");
    const pad = "b".repeat(2_000);
    await put(
      Array.from({ length: 700 }, (_, i) => `${p}.c${i}`),
      (i) => ({ i, pad }),
    );
    const c = await client();
    await c.sub(`${p}.*`, { from: "last_per_subject" });
    await waitFor(() => c.frames.find((f) => f.op === "live" && f.sub === `${p}.*`), { timeoutMs: 20_000, what: "live frame" });
    expect(c.msgs.map((m) => (m.data as { i: number }).i)).toEqual([...Array(700).keys()]);
    const url = `${gw.url}/v1/channels/${encodeURIComponent(`${p}.*`)}/messages?last_per_subject=1`;
    const first = (await (await fetch(url)).json()) as { messages: { data: { i: number } }[]; next?: number; upToSeq: number };
    expect(first.next).toBeGreaterThan(0);
    expect(first.messages.length).toBeLessThan(700);
    const seen = first.messages.map((m) => m.data.i);
    for (let next = first.next; next !== undefined;) {
      const page = (await (await fetch(`${url}&up_to_seq=${first.upToSeq}&from_seq=${next}`)).json()) as { messages: { data: { i: number } }[]; next?: number };
      seen.push(...page.messages.map((m) => m.data.i));
      next = page.next;
    }
    expect(seen).toEqual([...Array(700).keys()]);
  });

  it("HTTP ?last_per_subject=1 takes a pattern and says up to which seq", async () => {
    const p = uniq("http");
    await put([`${p}.x`, `${p}.y`, `${p}.x`], (i) => ({ i }));
    const r = await fetch(`${gw.url}/v1/channels/${encodeURIComponent(`${p}.*`)}/messages?last_per_subject=1`);
    expect(r.status).toBe(200);
    const body = (await r.json()) as { messages: { channel: string; data: { i: number } }[]; upToSeq: number; lastSeq: number; next?: number };
    expect(body.messages.map((m) => [m.channel, m.data.i])).toEqual([
      [`${p}.y`, 1],
      [`${p}.x`, 2],
    ]);
    expect(body.upToSeq).toBe(body.lastSeq);
    expect(body.next).toBeUndefined();
    const early = (await (
      await fetch(`${gw.url}/v1/channels/${encodeURIComponent(`${p}.*`)}/messages?last_per_subject=1&up_to_seq=${body.upToSeq - 1}`)
    ).json()) as {
      messages: { data: { i: number } }[];
    };
    expect(early.messages.map((m) => m.data.i)).toEqual([0, 1]);
    expect((await fetch(`${gw.url}/v1/channels/${encodeURIComponent(`${p}.*`)}/messages`)).status).toBe(400);
  });

  it("the SDK subscribes with from:last_per_subject, then gets live messages", async () => {
    const p = uniq("sdk");
    await put([`${p}.a`, `${p}.b`, `${p}.a`], (i) => ({ i }));
    const sdk = new GatewayClient(gw.wsUrl, { WebSocket: WebSocket as never, minDelayMs: 10, maxDelayMs: 50 });
    await sdk.connect();
    const got: GatewayMessage<{ i: number }>[] = [];
    const sub = sdk.subscribe<{ i: number }>(`${p}.*`, (m) => void got.push(m), { from: "last_per_subject" });
    await sub.ready;
    await waitFor(() => got.length === 2, { what: "2 last values" });
    expect(got.map((m) => m.data.i)).toEqual([1, 2]);
    await httpPublish(gw.url, `${p}.b`, { i: 7 });
    await waitFor(() => got.length === 3, { what: "the live message" });
    expect(got[2]!.data.i).toBe(7);
    await sdk.close();
  });
});
