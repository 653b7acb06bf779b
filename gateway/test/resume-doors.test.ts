// Every start position through both doors of a real gateway — WebSocket `sub` and Server-Sent Events — held
// to the one table the resume path is tested against in process (gateway/testkit/start-cases.ts): what is delivered
// from the store, then live, and what `ok` / the `gap` event report.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish, TestClient } from "#testkit/ws-client.js";
import { SseReader } from "#testkit/sse-client.js";
import { waitFor } from "#testkit/wait.js";
import { START_CASES, TABLE_FIRST, type CaseStart, type StartCase } from "#testkit/start-cases.js";

const CH = "resume.doors";
const OTHER_EPOCH = "2000-01-01T00:00:00.000Z";
let nats: NatsServerHandle;
let gw: GatewayHandle;
let nc: NatsConnection;
/** Seq of the table's message 0 in the real stream, and the stream's epoch. */
let base = 0;
let epoch = "";
const closers: (() => void)[] = [];

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 2 });
  nc = await connect({ servers: nats.url });
  const seqs: number[] = [];
  for (let i = 1; i <= 10; i++) {
    const r = await httpPublish(gw.url, CH, { i });
    expect(r.status).toBe(201);
    seqs.push(r.body.seq as number);
  }
  base = seqs[0]! - 1;
  expect(seqs).toEqual(seqs.map((_, i) => base + i + 1));
  // Messages 1..5 are removed, as retention would: the stream holds 6..10.
  const jsm = await jetstreamManager(nc);
  await jsm.streams.purge("FANOUT_CHANNELS", { seq: base + TABLE_FIRST });
  const info = await jsm.streams.info("FANOUT_CHANNELS");
  expect(info.state.first_seq).toBe(base + TABLE_FIRST);
  epoch = info.created;
});
afterAll(async () => {
  for (const c of closers) c();
  await nc?.close();
  await gw?.stop();
  await nats?.stop();
});

const abs = (rel: number) => base + rel;

/** The `from` of a WebSocket `sub` for a row (its seq is the first one wanted). */
function wsFrom(s: CaseStart): Record<string, unknown> {
  switch (s.kind) {
    case "live":
      return {};
    case "all":
      return { from: "all" };
    case "last":
      return { from: { last: s.last } };
    case "timeBefore":
      return { from: { time: "2000-01-01T00:00:00Z" } };
    case "after": {
      const e = s.epoch === "same" ? { epoch } : s.epoch === "other" ? { epoch: OTHER_EPOCH } : {};
      return { from: { seq: abs(s.after) + 1, ...e } };
    }
  }
}

/** The SSE request for a row: query and Last-Event-ID (undefined: SSE cannot ask for it). */
function sseStart(s: CaseStart): { query: string; headers: Record<string, string> } | undefined {
  switch (s.kind) {
    case "live":
      return { query: "", headers: {} };
    case "all":
      return undefined; // SSE has no "all": from_seq=1 is a resume from seq 1
    case "last":
      return { query: `last=${s.last}`, headers: {} };
    case "timeBefore":
      return { query: "since=2000-01-01T00:00:00Z", headers: {} };
    case "after":
      if (s.epoch === undefined) return { query: `from_seq=${abs(s.after) + 1}`, headers: {} };
      return { query: "", headers: { "last-event-id": `${s.epoch === "same" ? epoch : OTHER_EPOCH}:${abs(s.after)}` } };
  }
}

type Opened = { c: StartCase; seqs: () => number[]; check: () => void };

describe("resume — every start through both doors of a real gateway", () => {
  it("resume — WebSocket and SSE deliver each row's stored messages, then live, and report the same gap", async () => {
    const opened: Opened[] = [];
    for (const c of START_CASES) {
      const ws = await TestClient.connect(gw.wsUrl);
      closers.push(() => ws.close());
      const ok = await ws.sub(CH, wsFrom(c.start));
      opened.push({
        c,
        seqs: () => ws.msgs.map((m) => m.seq),
        check: () => {
          expect(ok.truncated === true, `${c.name}: ok.truncated`).toBe(c.truncated === true);
          expect(ok.epochChanged === true, `${c.name}: ok.epochChanged`).toBe(c.epochChanged === true);
          expect(ok.epoch).toBe(epoch);
          if (c.start.kind !== "live") expect(ok).toMatchObject({ firstSeq: abs(TABLE_FIRST), lastSeq: abs(10) });
        },
      });
      const q = sseStart(c.start);
      if (!q) continue;
      const r = await SseReader.open(`${gw.url}/v1/channels/${CH}/events${q.query ? `?${q.query}` : ""}`, q.headers);
      closers.push(() => r.close());
      expect(r.status, c.name).toBe(200);
      opened.push({
        c,
        seqs: () => r.seqs,
        check: () => {
          const gap = r.events.find((e) => e.event === "gap");
          const g = gap ? (JSON.parse(gap.data) as Record<string, unknown>) : {};
          expect(gap !== undefined, `${c.name}: sse gap event`).toBe(c.truncated === true);
          expect(g.epochChanged === true, `${c.name}: gap.epochChanged`).toBe(c.epochChanged === true);
          if (gap) {
            expect(g).toMatchObject({ truncated: true, firstSeq: abs(TABLE_FIRST), lastSeq: abs(10), epoch });
            expect(gap.id).toBe(`${epoch}:${abs(c.lastSent!)}`);
          }
        },
      });
    }
    // Every receiver has its stored messages before the live one is published (a live start has none).
    for (const o of opened) {
      const want = o.c.delivered.map(abs);
      await waitFor(() => o.seqs().length >= want.length || undefined, { what: `${o.c.name}: stored messages` });
    }
    const live = await httpPublish(gw.url, CH, { live: true });
    expect(live.status).toBe(201);
    const liveSeq = live.body.seq as number;
    for (const o of opened) {
      await waitFor(() => o.seqs().includes(liveSeq) || undefined, { what: `${o.c.name}: the live message` });
      expect(o.seqs(), o.c.name).toEqual([...o.c.delivered.map(abs), liveSeq]);
      o.check();
    }
  });
});
