// A chaos client process (forked by main.ts): runs the subscribers and publishers it is given against the
// three gateway instances and keeps a log of everything received and every publish's outcome, for the checker.
// Mostly raw WebSocket/SSE/NATS clients on purpose: the checker must see what the gateway sent, so nothing here
// drops a duplicate or reorders; their resume follows PROTOCOL.md as the SDK does (from:{seq:last+1,epoch},
// Last-Event-ID). A share of the resuming subscribers run the real SDK instead (SdkSubscriber), so the run
// also checks what an application gets from it.
// Every loop is bounded: reconnects stop at finish, finish waits at most its timeout.
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { get, type IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import WebSocket from "ws";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { GatewayClient, type WebSocketConstructor } from "@fanout-gateway/client";
import type { PublishRecord, Receipt, SubscriberKind, SubscriberLog } from "./checker.js";

export type SubSpec = {
  id: string;
  kind: SubscriberKind;
  pattern: string;
  urls: string[];
  start?: "live" | "seq1";
  durable?: string;
  ackDelayMs?: number;
  /** A resuming subscriber driven by the SDK (gateway/client) instead of this file's raw WebSocket client. */
  sdk?: boolean;
};
export type PubSpec = {
  id: string;
  via: "ws" | "http" | "nats";
  channels: string[];
  ratePerS: number;
  urls: string[];
  natsUrls: string[];
  subjectPrefix: string;
};
export type ClientsConfig = { subs: SubSpec[]; pubs: PubSpec[]; logFile: string };

/** Connection state changes, for the recovery times: up = subscribed again (its `ok`, or the SSE stream open). */
export type ConnEvent = { t: number; client: string; up: boolean; why?: string; sockets?: SocketSnapshot };
/**
 * A silent stream's TCP connection when the stream was given up: `client` its end in this process (state,
 * Recv-Q, Send-Q, addresses; none when it is gone), `server` the gateway's end (with its owning pid).
 * CLOSE-WAIT on a client end means the gateway closed and the reader never noticed; an ESTAB pair with empty
 * queues means the gateway is not writing.
 */
export type SocketSnapshot = { client: string[]; server: string[] } | { error: string };
export type ClientsLog = { subscribers: SubscriberLog[]; publishes: PublishRecord[]; events: ConnEvent[] };

export type ToClients =
  | { type: "start-publishing" }
  | { type: "stop-publishing" }
  | { type: "burst"; fraction: number; seed: number }
  | { type: "stall"; ms: number; fraction: number; seed: number }
  | { type: "finish"; until: Record<string, number>; owed: Record<string, number[]>; timeoutMs: number };
export type FromClients = { type: "ready" } | { type: "publishing-stopped" } | { type: "finished"; pending: string[] } | { type: "error"; message: string };

const events: ConnEvent[] = [];
const send = (m: FromClients): void => void process.send?.(m);
const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/** Three of the chaos gateways' SSE heartbeat intervals (topology.ts: 2 s). */
const SILENT_MS = 6_000;
const wsUrl = (base: string) => base.replace(/^http/, "ws") + "/ws";
/** At most this many silent streams get a socket snapshot (each runs `ss` once). */
const SNAPSHOTS = 100;
let snapshots = 0;

/** `ss` of the stream's connection, from `localPort` to the gateway port of `url`, both ends (SocketSnapshot). */
function socketSnapshot(url: string, localPort: number): Promise<SocketSnapshot> {
  const port = new URL(url).port;
  return new Promise((resolve) => {
    execFile("ss", ["-tnpH", "state", "all", `( dport = :${port} or sport = :${port} )`], { timeout: 3_000 }, (err, out) => {
      if (err) return resolve({ error: err.message });
      const rows = out
        .split("\n")
        .filter(Boolean)
        .map((l) => l.trim().split(/\s+/));
      const mine = rows.filter((r) => r[4]?.endsWith(`:${port}`) && r[3]?.endsWith(`:${localPort}`));
      // The gateway's end, of a connection this process still holds.
      const theirs = mine.length === 0 ? [] : rows.filter((r) => r[3]?.endsWith(`:${port}`) && r[4]?.endsWith(`:${localPort}`));
      const show = (r: string[]) => `${r[0]} recvq=${r[1]} sendq=${r[2]} ${r[3]} -> ${r[4]} ${(/pid=(\d+)/.exec(r.slice(5).join(" ")) ?? [])[0] ?? ""}`.trim();
      resolve({ client: mine.map(show), server: theirs.map(show) });
    });
  });
}
let finishing = false;

type MsgFrame = { op: "msg"; channel: string; seq: number; data?: { id?: string; t?: number }; redelivered?: boolean; durable?: string };

function receipt(f: MsgFrame): Receipt {
  const now = Date.now();
  const r: Receipt = { t: now, channel: f.channel, seq: f.seq };
  if (typeof f.data?.id === "string") r.id = f.data.id;
  if (typeof f.data?.t === "number") r.latencyMs = now - f.data.t;
  if (f.redelivered) r.redelivered = true;
  return r;
}

interface Runner {
  readonly spec: SubSpec;
  readonly log: SubscriberLog;
  ready: Promise<void>;
  maxSeq(): number;
  settled(): boolean;
  /** For the report of a subscriber that did not catch up: its connection and its last receipt. */
  state(): string;
  /** Durables: every owed seq received (a message held by a killed worker comes back after the ack wait). */
  has(seq: number): boolean;
  drop(): void;
  stall(ms: number): void;
  stop(): void;
}

/** A client that stops reading: the socket's reads pause for `ms` (the server's writes back up meanwhile). */
function stallSocket(ws: WebSocket | undefined, ms: number): void {
  const sock = (ws as unknown as { _socket?: Socket } | undefined)?._socket;
  sock?.pause();
  setTimeout(() => sock?.resume(), ms);
}

/** A subscriber that acks nothing: always settled, and what it is owed is the checker's to judge from its log. */
abstract class Unacked {
  protected lastSeq = 0;
  maxSeq(): number {
    return this.lastSeq;
  }
  settled(): boolean {
    return true;
  }
  has(): boolean {
    return true;
  }
}

/** A WebSocket subscriber that reconnects to the next instance and resumes (or re-binds its durable). */
class WsSubscriber implements Runner {
  readonly log: SubscriberLog;
  ready: Promise<void>;
  private markReady!: () => void;
  private ws?: WebSocket;
  private n = 0;
  private lastSeq = 0;
  private epoch?: string;
  private stopped = false;
  private unacked = new Set<number>();
  private seen = new Set<number>();
  private req = 0;

  constructor(readonly spec: SubSpec) {
    this.log = { client: spec.id, kind: spec.kind, pattern: spec.pattern, fromSeq: 1, receipts: [], acked: spec.kind === "durable" ? [] : undefined };
    this.ready = new Promise((r) => (this.markReady = r));
    this.open();
  }

  maxSeq(): number {
    return this.lastSeq;
  }
  settled(): boolean {
    return this.unacked.size === 0;
  }
  has(seq: number): boolean {
    return this.seen.has(seq);
  }
  state(): string {
    const last = this.log.receipts.at(-1);
    const open = this.ws?.readyState === WebSocket.OPEN;
    return `socket ${open ? "open" : "not open"} to ${this.ws?.url ?? "-"}, ${this.unacked.size} unacked, last message ${last ? `${Date.now() - last.t} ms ago (seq ${last.seq})` : "never"}`;
  }

  private subFrame(): Record<string, unknown> {
    const f: Record<string, unknown> = { op: "sub", id: ++this.req, channel: this.spec.pattern };
    if (this.spec.kind === "durable") Object.assign(f, { durable: this.spec.durable, ack: true, maxInflight: 50 });
    else if (this.lastSeq > 0) f.from = { seq: this.lastSeq + 1, ...(this.epoch ? { epoch: this.epoch } : {}) };
    else if (this.spec.start !== "live") f.from = { seq: 1 };
    return f;
  }

  private open(): void {
    if (this.stopped) return;
    const url = wsUrl(this.spec.urls[this.n++ % this.spec.urls.length]!);
    const ws = new WebSocket(url);
    this.ws = ws;
    let subId = 0;
    const guard = setTimeout(() => ws.terminate(), 10_000); // no open + ok within 10 s: try the next instance
    ws.on("open", () => {
      const f = this.subFrame();
      subId = f.id as number;
      ws.send(JSON.stringify(f));
    });
    ws.on("message", (d: Buffer) => {
      const f = JSON.parse(d.toString()) as Record<string, unknown>;
      if (f.op === "msg") return this.onMsg(ws, f as unknown as MsgFrame);
      if (f.op === "ok" && f.id === subId) {
        clearTimeout(guard);
        if (typeof f.epoch === "string") this.epoch = f.epoch;
        events.push({ t: Date.now(), client: this.spec.id, up: true });
        this.markReady();
      } else if (f.op === "ok" && typeof f.id === "string" && f.id.startsWith("a")) {
        const seq = Number(f.id.slice(1));
        this.unacked.delete(seq);
        this.log.acked!.push(seq);
      } else if (f.op === "err" && f.id === subId) {
        ws.close(4000, "sub refused");
      }
    });
    ws.on("error", () => undefined);
    ws.on("close", (code: number) => {
      clearTimeout(guard);
      if (this.ws !== ws) return;
      this.unacked.clear(); // released by the server, redelivered to the next binding
      events.push({ t: Date.now(), client: this.spec.id, up: false, why: String(code) });
      if (!this.stopped) setTimeout(() => this.open(), 50 + Math.random() * 200);
    });
  }

  private onMsg(ws: WebSocket, f: MsgFrame): void {
    this.log.receipts.push({ ...receipt(f), conn: this.n });
    if (f.seq > this.lastSeq) this.lastSeq = f.seq;
    if (this.spec.kind !== "durable") return;
    this.seen.add(f.seq);
    this.unacked.add(f.seq);
    const ack = () => {
      if (ws.readyState === WebSocket.OPEN && this.ws === ws) ws.send(JSON.stringify({ op: "ack", id: `a${f.seq}`, seq: f.seq }));
    };
    if (this.spec.ackDelayMs) setTimeout(ack, this.spec.ackDelayMs);
    else ack();
  }

  drop(): void {
    this.ws?.terminate();
  }
  stall(ms: number): void {
    stallSocket(this.ws, ms);
  }
  stop(): void {
    this.stopped = true;
    this.ws?.close(1000);
  }
}

/**
 * A resuming subscriber driven by the real SDK (gateway/client): the SDK reconnects and resumes on its own, so
 * what is logged is what an application gets from it, and the checker holds the SDK to the same rule (every
 * stored message of the pattern once, in order per channel). Unlike the raw subscribers it stays with one
 * instance (the SDK takes one URL) and waits out that instance's restarts with its backoff.
 */
class SdkSubscriber extends Unacked implements Runner {
  readonly log: SubscriberLog;
  readonly ready: Promise<void>;
  private readonly client: GatewayClient;
  private socket?: WebSocket;
  private conns = 0;
  private open = false;

  constructor(readonly spec: SubSpec) {
    super();
    this.log = { client: spec.id, kind: spec.kind, pattern: spec.pattern, fromSeq: 1, receipts: [] };
    // The SDK's sockets, seen as they are made: a client burst or stall acts on the current one.
    const track = (ws: WebSocket) => (this.socket = ws);
    class Tracked extends WebSocket {
      constructor(url: string, protocols?: string | string[]) {
        super(url, protocols);
        track(this);
      }
    }
    this.client = new GatewayClient(wsUrl(spec.urls[0]!), { WebSocket: Tracked as unknown as WebSocketConstructor, minDelayMs: 50, maxDelayMs: 2_000 });
    this.client.on("connected", () => {
      this.conns++;
      this.open = true;
    });
    this.client.on("resubscribed", () => events.push({ t: Date.now(), client: spec.id, up: true }));
    this.client.on("disconnected", (e) => {
      this.open = false;
      events.push({ t: Date.now(), client: spec.id, up: false, why: String(e.code) });
    });
    const sub = this.client.subscribe(
      spec.pattern,
      (m) => {
        this.log.receipts.push({ ...receipt(m as unknown as MsgFrame), conn: this.conns });
        if (m.seq > this.lastSeq) this.lastSeq = m.seq;
      },
      spec.start === "live" ? {} : { from: { seq: 1 } },
    );
    this.ready = sub.ready.then(() => undefined);
    void this.client.connect().catch(() => undefined);
  }
  state(): string {
    const last = this.log.receipts.at(-1);
    return `SDK ${this.open ? "connected" : "not connected"} to ${this.spec.urls[0]}, ${this.conns} connections, last message ${last ? `${Date.now() - last.t} ms ago (seq ${last.seq})` : "never"}`;
  }
  drop(): void {
    this.socket?.terminate();
  }
  stall(ms: number): void {
    stallSocket(this.socket, ms);
  }
  stop(): void {
    void this.client.close();
  }
}

/** An SSE stream reader (node:http + its own event parser, as an EventSource would): resumes with Last-Event-ID. */
class SseSubscriber extends Unacked implements Runner {
  readonly log: SubscriberLog;
  ready: Promise<void>;
  private markReady!: () => void;
  private n = 0;
  private lastId?: string;
  private stopped = false;
  private abort?: AbortController;
  private stalledUntil = 0;
  /** The stream being read: where, since when, and when its last bytes (a heartbeat or an event) came. */
  private conn = { url: "", openedAt: 0, lastBytesAt: 0, chunks: 0, localPort: undefined as number | undefined };
  private res?: IncomingMessage;
  /** Streams given up for silence: no bytes, not even a heartbeat, for SILENT_MS while reading. */
  silent = 0;
  private wentSilent = false;
  private silentSockets?: SocketSnapshot;
  private readonly watchdog = setInterval(() => this.checkSilence(), 1_000);

  constructor(readonly spec: SubSpec) {
    super();
    this.log = { client: spec.id, kind: "sse", pattern: spec.pattern, fromSeq: 1, receipts: [] };
    this.ready = new Promise((r) => (this.markReady = r));
    void this.loop();
  }
  state(): string {
    const last = this.log.receipts.at(-1);
    const c = this.conn;
    const ago = (t: number) => (t ? `${Date.now() - t} ms ago` : "never");
    return `stream ${this.abort && !this.abort.signal.aborted ? "open" : "closed"}, last message ${last ? `${ago(last.t)} (seq ${last.seq})` : "never"}; last stream ${c.url} opened ${ago(c.openedAt)}, ${c.chunks} chunks, last bytes ${ago(c.lastBytesAt)}`;
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      const base = this.spec.urls[this.n++ % this.spec.urls.length]!;
      const ac = new AbortController();
      this.abort = ac;
      const openGuard = setTimeout(() => ac.abort(), 10_000);
      let why = "end";
      try {
        const url = `${base}/v1/channels/${encodeURIComponent(this.spec.pattern)}/events${this.lastId ? "" : "?from_seq=1"}`;
        const res = await open(url, this.lastId ? { "last-event-id": this.lastId } : {}, ac.signal);
        clearTimeout(openGuard);
        if (res.statusCode !== 200) {
          why = `http ${res.statusCode}`;
          res.destroy();
        } else {
          events.push({ t: Date.now(), client: this.spec.id, up: true });
          this.conn = { url, openedAt: Date.now(), lastBytesAt: 0, chunks: 0, localPort: res.socket.localPort };
          this.markReady();
          await this.read(res);
        }
      } catch (e) {
        why = (e as Error).name === "AbortError" ? "aborted" : String((e as Error).message);
      }
      clearTimeout(openGuard);
      const sockets = this.silentSockets;
      if (this.wentSilent) why = `silent: ${this.conn.url}, ${this.conn.chunks} chunks`;
      this.wentSilent = false;
      this.silentSockets = undefined;
      events.push({ t: Date.now(), client: this.spec.id, up: false, why, ...(sockets ? { sockets } : {}) });
      if (!this.stopped) await delay(50 + Math.random() * 200);
    }
  }

  /**
   * A browser's EventSource waits on a dead connection until the OS notices; the gateway's heartbeats let a
   * reader notice sooner. Each stream is read with node:http on a connection of its own, as EventSource
   * does (Node's fetch was seen here to leave a read pending after its connection had closed).
   */
  private checkSilence(): void {
    if (this.stopped) return clearInterval(this.watchdog);
    const c = this.conn;
    const res = this.res;
    if (!res || !c.openedAt) return;
    const since = Math.max(c.openedAt, c.lastBytesAt, this.stalledUntil);
    if (Date.now() - since < SILENT_MS) return;
    this.silent++;
    this.conn = { ...c, openedAt: 0 };
    this.wentSilent = true;
    const giveUp = () => {
      this.abort?.abort();
      res.destroy();
    };
    if (c.localPort === undefined || snapshots++ >= SNAPSHOTS) return giveUp();
    // What the stream's socket looked like while it was silent (before giving up closes this end).
    void socketSnapshot(c.url, c.localPort).then((snap) => {
      this.silentSockets = snap;
      giveUp();
    });
  }

  /** Reads events until the response ends, fails or is destroyed; a stalled client stops reading meanwhile. */
  private async read(res: IncomingMessage): Promise<void> {
    this.res = res;
    let buf = "";
    res.setEncoding("utf8");
    try {
      for await (const chunk of res as AsyncIterable<string>) {
        this.conn.lastBytesAt = Date.now();
        this.conn.chunks++;
        buf += chunk;
        let i: number;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          this.onEvent(buf.slice(0, i));
          buf = buf.slice(i + 2);
        }
        const wait = this.stalledUntil - Date.now();
        if (wait > 0) await delay(wait);
      }
    } finally {
      this.res = undefined;
    }
  }

  private onEvent(block: string): void {
    let id: string | undefined;
    let event = "message";
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("id: ")) id = line.slice(4);
      else if (line.startsWith("event: ")) event = line.slice(7);
      else if (line.startsWith("data: ")) data.push(line.slice(6));
    }
    if (id !== undefined) this.lastId = id;
    if (event !== "message" || data.length === 0) return;
    const f = JSON.parse(data.join("\n")) as MsgFrame;
    if (f.op !== "msg") return;
    this.log.receipts.push(receipt(f));
    if (f.seq > this.lastSeq) this.lastSeq = f.seq;
  }

  drop(): void {
    this.abort?.abort();
    this.res?.destroy();
  }
  stall(ms: number): void {
    this.stalledUntil = Date.now() + ms;
  }
  stop(): void {
    this.stopped = true;
    clearInterval(this.watchdog);
    this.abort?.abort();
  }
}

/** A GET on a connection of its own; resolves with the response once its head has come. */
function open(url: string, headers: Record<string, string>, signal: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = get(url, { headers: { accept: "text/event-stream", ...headers }, agent: false, signal }, resolve);
    req.once("error", reject);
  });
}

/** A publisher at a steady rate, one publish in flight, no retries: each outcome is recorded as it was told. */
class Publisher {
  readonly records: PublishRecord[] = [];
  private stopped = false;
  private done?: Promise<void>;
  private ws?: WebSocket;
  private wsWaiters = new Map<string, (f: Record<string, unknown>) => void>();
  private n = 0;
  private conn = 0;
  private js?: JetStreamClient;
  private nc?: NatsConnection;

  constructor(readonly spec: PubSpec) {}

  async init(): Promise<void> {
    if (this.spec.via === "ws") this.openWs();
    if (this.spec.via === "nats") {
      this.nc = await connect({ servers: this.spec.natsUrls, maxReconnectAttempts: -1, reconnectTimeWait: 250, name: `chaos-${this.spec.id}` });
      this.js = jetstream(this.nc, { timeout: 5_000 });
    }
  }

  private openWs(): void {
    if (this.stopped) return;
    const ws = new WebSocket(wsUrl(this.spec.urls[this.conn++ % this.spec.urls.length]!));
    this.ws = ws;
    ws.on("message", (d: Buffer) => {
      const f = JSON.parse(d.toString()) as Record<string, unknown>;
      const w = typeof f.id === "string" ? this.wsWaiters.get(f.id) : undefined;
      if (w) w(f);
    });
    ws.on("error", () => undefined);
    ws.on("close", () => {
      for (const w of this.wsWaiters.values()) w({ op: "err", code: "closed" });
      if (!this.stopped) setTimeout(() => this.openWs(), 100 + Math.random() * 200);
    });
  }

  start(): void {
    this.done = this.loop();
  }

  private async loop(): Promise<void> {
    const gap = 1000 / this.spec.ratePerS;
    let next = Date.now();
    while (!this.stopped) {
      const channel = this.spec.channels[this.n % this.spec.channels.length]!;
      const id = `${this.spec.id}-${++this.n}`;
      const t0 = Date.now();
      const r = await this.publishOne(id, channel, t0);
      this.records.push({ id, channel, via: this.spec.via, t0, t1: Date.now(), ...r });
      next += gap;
      const wait = next - Date.now();
      if (wait > 0) await delay(wait);
      else next = Date.now();
    }
  }

  private async publishOne(id: string, channel: string, t: number): Promise<{ seq: number } | { error: string }> {
    const data = { id, t };
    try {
      if (this.spec.via === "nats") {
        const pa = await this.js!.publish(`${this.spec.subjectPrefix}.${channel}`, JSON.stringify(data), { msgID: id, timeout: 5_000 });
        return { seq: pa.seq };
      }
      if (this.spec.via === "http") {
        const base = this.spec.urls[this.n % this.spec.urls.length]!;
        const res = await fetch(`${base}/v1/publish/${channel}`, {
          method: "POST",
          body: JSON.stringify(data),
          headers: { "content-type": "application/json", "idempotency-key": id },
          signal: AbortSignal.timeout(5_000),
        });
        const body = (await res.json()) as { seq?: number; error?: string };
        return res.status === 201 && typeof body.seq === "number" ? { seq: body.seq } : { error: `http ${res.status} ${body.error ?? ""}` };
      }
      const ws = this.ws;
      if (!ws || ws.readyState !== WebSocket.OPEN) return { error: "not connected" };
      const reply = await new Promise<Record<string, unknown>>((resolve) => {
        const timer = setTimeout(() => resolve({ op: "err", code: "timeout" }), 5_000);
        this.wsWaiters.set(id, (f) => {
          clearTimeout(timer);
          this.wsWaiters.delete(id);
          resolve(f);
        });
        ws.send(JSON.stringify({ op: "pub", id, channel, data, msgId: id }));
      });
      return reply.op === "ok" && typeof reply.seq === "number" ? { seq: reply.seq } : { error: String(reply.code ?? "err") };
    } catch (e) {
      return { error: String((e as Error).message ?? e).slice(0, 120) };
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
    this.ws?.close(1000);
    await this.nc?.close();
  }
}

/** A seeded pick of a fraction of the runners (the same seed picks the same clients). */
function pick<T>(all: T[], fraction: number, seed: number): T[] {
  const scored = all.map((x, i) => ({ x, k: Math.sin(seed * 9301 + i * 49297) }));
  return scored
    .sort((a, b) => a.k - b.k)
    .slice(0, Math.max(1, Math.round(all.length * fraction)))
    .map((s) => s.x);
}

async function main(): Promise<void> {
  const cfg = JSON.parse(process.argv[2]!) as ClientsConfig;
  const runners: Runner[] = cfg.subs.map((s) => (s.kind === "sse" ? new SseSubscriber(s) : s.sdk ? new SdkSubscriber(s) : new WsSubscriber(s)));
  const pubs = cfg.pubs.map((p) => new Publisher(p));
  await Promise.all(pubs.map((p) => p.init()));
  await Promise.all(runners.map((r) => r.ready));
  send({ type: "ready" });
  process.on("message", (m: ToClients) => {
    if (m.type === "start-publishing") pubs.forEach((p) => p.start());
    else if (m.type === "stop-publishing") void Promise.all(pubs.map((p) => p.stop())).then(() => send({ type: "publishing-stopped" }));
    else if (m.type === "burst" && runners.length) pick(runners, m.fraction, m.seed).forEach((r) => r.drop());
    else if (m.type === "stall" && runners.length) pick(runners, m.fraction, m.seed).forEach((r) => r.stall(m.ms));
    else if (m.type === "finish") void finish(m.until, m.owed, m.timeoutMs);
  });
  const finish = async (until: Record<string, number>, owed: Record<string, number[]>, timeoutMs: number): Promise<void> => {
    if (finishing) return;
    finishing = true;
    const deadline = Date.now() + timeoutMs;
    const missing = (r: Runner) => (owed[r.spec.id] ?? []).filter((s) => !r.has(s)).length;
    const pending = () => runners.filter((r) => r.maxSeq() < (until[r.spec.id] ?? 0) || !r.settled() || missing(r) > 0);
    while (pending().length > 0 && Date.now() < deadline) await delay(100);
    const left = pending().map(
      (r) =>
        `${r.spec.id} at ${r.maxSeq()}/${until[r.spec.id] ?? 0}${r.settled() ? "" : " (unacked)"}${missing(r) ? ` (${missing(r)} owed not received)` : ""}, ${r.state()}`,
    );
    runners.forEach((r) => r.stop());
    const log: ClientsLog = { subscribers: runners.map((r) => r.log), publishes: pubs.flatMap((p) => p.records), events };
    writeFileSync(cfg.logFile, JSON.stringify(log));
    send({ type: "finished", pending: left });
    setTimeout(() => process.exit(0), 200);
  };
  process.on("disconnect", () => process.exit(0)); // the run is gone: do not linger
}

main().catch((e: unknown) => {
  send({ type: "error", message: String((e as Error).stack ?? e) });
  process.exit(1);
});
