// History paging against a real gateway and nats-server (PROTOCOL.md "HTTP on the same port"): a page cut
// by `limit` or by HISTORY_MAX_BYTES carries `next`, forwards (`from_seq`) and backwards (`reverse=1`,
// `before_seq`), and following it reads the channel to its end with no gap and no duplicate, its messages
// interleaved with another channel's so seqs are sparse. Binary payloads keep `enc` and `type` either way,
// and the TypeScript SDK pages both ways and hands binary history items on as bytes.
import { connect, headers as natsHeaders, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient, type HistoryMessage, type WebSocketConstructor } from "../client/src/index.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { uniqueNames } from "#testkit/clients.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
let nc: NatsConnection;
let js: JetStreamClient;
const uniq = uniqueNames();
const MAX_BYTES = 16_384;

type Item = { seq: number; channel: string; data: unknown; enc?: string; type?: string };
type Page = { messages: Item[]; next?: number; firstSeq: number; lastSeq: number; reverse?: boolean };

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({
    natsUrl: nats.url,
    workers: 1,
    env: { HISTORY_MAX_BYTES: String(MAX_BYTES), READ_RATE_PER_IP: "-1", HISTORY_CONCURRENCY_PER_IP: "-1" },
  });
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
});
afterAll(async () => {
  await nc?.close();
  await gw?.stop();
  await nats?.stop();
});

/** `count` messages `{i, pad}` on `ch`, each followed by one on `other` (sparse seqs); returns ch's seqs. */
async function fill(ch: string, other: string, count: number, pad = ""): Promise<number[]> {
  const seqs: number[] = [];
  for (let i = 0; i < count; i += 100) {
    const acks = await Promise.all(
      Array.from({ length: Math.min(100, count - i) }, (_, k) => [
        js.publish(`ev.${ch}`, JSON.stringify({ i: i + k, pad })),
        js.publish(`ev.${other}`, JSON.stringify({ other: i + k })),
      ]).flat(),
    );
    acks.forEach((a, n) => n % 2 === 0 && seqs.push(a.seq));
  }
  return seqs.sort((a, b) => a - b);
}

async function get(ch: string, query: string): Promise<{ status: number; bytes: number; body: Page & { error?: string } }> {
  const r = await fetch(`${gw.url}/v1/channels/${encodeURIComponent(ch)}/messages?${query}`);
  const text = await r.text();
  return { status: r.status, bytes: Buffer.byteLength(text), body: JSON.parse(text) as Page & { error?: string } };
}

/** Follows `next` from `first` (`cursor` names the query parameter it is sent as); every page and the items. */
async function walk(ch: string, first: string, cursor: "from_seq" | "before_seq", rest: string): Promise<{ pages: Page[]; items: Item[] }> {
  const pages: Page[] = [];
  let r = await get(ch, first);
  for (;;) {
    expect(r.status).toBe(200);
    expect(r.bytes).toBeLessThanOrEqual(MAX_BYTES);
    pages.push(r.body);
    if (r.body.next === undefined) break;
    expect(pages.length).toBeLessThan(100);
    r = await get(ch, `${cursor}=${r.body.next}&${rest}`);
  }
  return { pages, items: pages.flatMap((p) => p.messages) };
}

const iOf = (m: Item) => (m.data as { i: number }).i;

describe("history paging — forwards", () => {
  it("history paging — a page cut by limit carries next; following it reads 250 sparse messages once each, the last page without next", async () => {
    const ch = uniq("hp.fwd.");
    const seqs = await fill(ch, uniq("hp.noise."), 250);
    const { pages, items } = await walk(ch, "limit=100", "from_seq", "limit=100");
    expect(pages.map((p) => p.messages.length)).toEqual([100, 100, 50]);
    expect(pages[0]!.next).toBe(seqs[99]! + 1);
    expect(items.map((m) => m.seq)).toEqual(seqs);
    expect(items.map(iOf)).toEqual([...Array(250).keys()]);
  });

  it("history paging — the default limit (100) cuts a page too, and last=N with more stored after it has next", async () => {
    const ch = uniq("hp.def.");
    const seqs = await fill(ch, uniq("hp.noise."), 150);
    const first = await get(ch, "from_seq=1");
    expect(first.body.messages).toHaveLength(100);
    expect(first.body.next).toBe(seqs[99]! + 1);
    const exact = await get(ch, `from_seq=${seqs[100]}&limit=50`);
    expect(exact.body.messages).toHaveLength(50);
    expect(exact.body).not.toHaveProperty("next");
    const lastN = await get(ch, "last=150");
    expect(lastN.body.messages).toHaveLength(150);
    expect(lastN.body).not.toHaveProperty("next");
  });

  it("history paging — a page cut by HISTORY_MAX_BYTES before limit carries next, and the walk is whole", async () => {
    const ch = uniq("hp.bytes.");
    const seqs = await fill(ch, uniq("hp.noise."), 60, "b".repeat(1_000));
    const { pages, items } = await walk(ch, "limit=1000", "from_seq", "limit=1000");
    expect(pages.length).toBeGreaterThan(3);
    expect(items.map((m) => m.seq)).toEqual(seqs);
  });
});

describe("history paging — reverse", () => {
  it("history paging — reverse=1 reads newest first; next is the before_seq of the older page; 250 sparse messages once each", async () => {
    const ch = uniq("hp.rev.");
    const seqs = await fill(ch, uniq("hp.noise."), 250);
    const { pages, items } = await walk(ch, "reverse=1&limit=100", "before_seq", "reverse=1&limit=100");
    expect(pages.map((p) => p.messages.length)).toEqual([100, 100, 50]);
    expect(pages[0]!.reverse).toBe(true);
    expect(pages[0]!.next).toBe(seqs[150]);
    expect(items.map((m) => m.seq)).toEqual([...seqs].reverse());
    expect(items.map(iOf)).toEqual([...Array(250).keys()].reverse());
  });

  it("history paging — reverse from a before_seq in the middle, and cut by HISTORY_MAX_BYTES: the newest of each page are kept", async () => {
    const ch = uniq("hp.revb.");
    const seqs = await fill(ch, uniq("hp.noise."), 60, "r".repeat(1_000));
    const mid = await get(ch, `reverse=1&before_seq=${seqs[10]}&limit=5`);
    expect(mid.body.messages.map(iOf)).toEqual([9, 8, 7, 6, 5]);
    expect(mid.body.next).toBe(seqs[5]);
    const end = await get(ch, `reverse=1&before_seq=${seqs[3]}&limit=5`);
    expect(end.body.messages.map(iOf)).toEqual([2, 1, 0]);
    expect(end.body).not.toHaveProperty("next");
    const { pages, items } = await walk(ch, "reverse=1&limit=1000", "before_seq", "reverse=1&limit=1000");
    expect(pages.length).toBeGreaterThan(3);
    expect(pages[0]!.messages[0]!.seq).toBe(seqs.at(-1));
    expect(items.map((m) => m.seq)).toEqual([...seqs].reverse());
  });

  it("history paging — reverse on an empty channel is an empty page without next; malformed combinations are 400 bad_request", async () => {
    const ch = uniq("hp.empty.");
    const empty = await get(ch, "reverse=1");
    expect(empty.status).toBe(200);
    expect(empty.body.messages).toEqual([]);
    expect(empty.body).not.toHaveProperty("next");
    for (const q of ["reverse=1&from_seq=1", "reverse=1&last=3", "before_seq=4", "reverse=yes", "reverse=1&before_seq=0"]) {
      const r = await get(ch, q);
      expect([q, r.status, r.body.error]).toEqual([q, 400, "bad_request"]);
    }
  });
});

describe("history paging — binary payloads and the SDK", () => {
  const bytes = Uint8Array.from([0, 1, 2, 0xfe, 0xff]);

  /** Bytes with a content type, a UTF-8 text and a JSON value, stored as NATS publishers store them. */
  async function publishMixed(ch: string): Promise<void> {
    const h = natsHeaders();
    h.set("Fanout-Content-Type", "image/png");
    await js.publish(`ev.${ch}`, bytes, { headers: h });
    await js.publish(`ev.${ch}`, "plain text");
    await js.publish(`ev.${ch}`, '{"n":1}');
  }

  it("history paging — enc and type in every history item, forwards and in reverse", async () => {
    const ch = uniq("hp.bin.");
    await publishMixed(ch);
    const fwd = (await get(ch, "limit=10")).body.messages;
    const rev = (await get(ch, "reverse=1&limit=10")).body.messages;
    expect(rev).toEqual([...fwd].reverse());
    expect(fwd[0]).toMatchObject({ enc: "base64", type: "image/png", data: Buffer.from(bytes).toString("base64") });
    expect(fwd[1]).toMatchObject({ enc: "text", data: "plain text" });
    expect(fwd[2]).toMatchObject({ data: { n: 1 } });
    expect(fwd[2]).not.toHaveProperty("enc");
  });

  it("history paging — the TypeScript SDK pages forwards and in reverse with next, and gives binary items as bytes with their type", async () => {
    const ch = uniq("hp.sdk.");
    const seqs = await fill(ch, uniq("hp.noise."), 25);
    await publishMixed(ch);
    const client = new GatewayClient(gw.wsUrl, { WebSocket: WebSocket as unknown as WebSocketConstructor });
    try {
      const read = async (reverse: boolean) => {
        const got: HistoryMessage[] = [];
        let page = await client.history(ch, { limit: 10, reverse });
        for (got.push(...page.messages); page.next !== undefined; got.push(...page.messages))
          page = await client.history(ch, { limit: 10, reverse, ...(reverse ? { beforeSeq: page.next } : { fromSeq: page.next }) });
        return got;
      };
      const fwd = await read(false);
      const rev = await read(true);
      expect(fwd).toHaveLength(28);
      expect(fwd.slice(0, 25).map((m) => m.seq)).toEqual(seqs);
      expect(rev).toEqual([...fwd].reverse());
      const bin = fwd[25]!;
      expect(bin).toMatchObject({ enc: "binary", type: "image/png" });
      expect(bin.data).toBeInstanceOf(Uint8Array);
      expect(Buffer.from(bin.data as Uint8Array)).toEqual(Buffer.from(bytes));
      expect(fwd[26]).toMatchObject({ enc: "text", data: "plain text" });
    } finally {
      await client.close();
    }
  });
});
