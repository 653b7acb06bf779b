// The soak's workload: steady churn well below capacity, every door of the gateway used over and over.
// WebSocket slots open a session, subscribe (live, resumed from {seq,epoch}, durable with acks, or with
// presence), hold it a few seconds, then close it (gracefully or by dropping the TCP connection) and start
// again; SSE slots do the same with Last-Event-ID; publishers use WS `pub` and HTTP (single and batch);
// readers poll the history and presence endpoints. Every client picks one of many loopback source addresses,
// so the per-IP tables see many clients come and go. Seeded: the same seed makes the same choices.
import WebSocket from "ws";
import { rng } from "../bench/rng.js";
import { matches } from "../chaos/checker.js";
import { openStream, request } from "./http.js";

export type ChurnOptions = {
  /** http://host:port of the gateway. */
  url: string;
  seed: number;
  /** Source addresses the clients use. */
  ips: string[];
  /** Concurrent WebSocket subscriber sessions and SSE streams. */
  wsSlots: number;
  sseSlots: number;
  /** Messages per second over WS `pub` and over HTTP. */
  wsPubRate: number;
  httpPubRate: number;
  /** History and presence reads per second. */
  readRate: number;
  /** Session lifetime range (ms). */
  sessionMs: [number, number];
};

/** The channels and patterns the workload uses; the map bounds of the verdict are derived from them. */
export const CHANNELS = Array.from({ length: 8 }, (_, i) => `soak.c${i}`);
export const ROOMS = Array.from({ length: 24 }, (_, i) => `soak.room.${i}`);
export const WILDCARDS = ["soak.*", "soak.>", "soak.room.*"];
/** Durable names, each bound to one channel (a name is bound to one channel per user). */
export const DURABLES = CHANNELS.slice(0, 4).map((channel, i) => ({ name: `d${i}`, channel }));
/** Users the connect hook names (by source address): durables and read limits are per user. */
export const USERS = 4;
/** The user the connect hook names for a source address: its last octet modulo USERS. */
export const userOf = (ip: string): string => `u${(Number(ip.split(".").at(-1)) || 0) % USERS}`;

export type ChurnCounts = {
  wsSessions: number;
  wsDropped: number;
  sseStreams: number;
  subOk: number;
  resumes: number;
  durableBinds: number;
  presenceJoins: number;
  received: number;
  acks: number;
  naks: number;
  publishedWs: number;
  publishedHttp: number;
  historyReads: number;
  presenceReads: number;
  /** Refusals and failures by code (`sub:forbidden`, `http:429`, `pub:timeout`, …). */
  errors: Record<string, number>;
};

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

type Frame = Record<string, unknown>;

export class Churn {
  readonly counts: ChurnCounts = {
    wsSessions: 0,
    wsDropped: 0,
    sseStreams: 0,
    subOk: 0,
    resumes: 0,
    durableBinds: 0,
    presenceJoins: 0,
    received: 0,
    acks: 0,
    naks: 0,
    publishedWs: 0,
    publishedHttp: 0,
    historyReads: 0,
    presenceReads: 0,
    errors: {},
  };
  private stopped = false;
  private readonly loops: Promise<void>[] = [];
  private readonly rand: () => number;
  /** Resume positions per pattern (shared by the slots: a later session resumes where an earlier one was). */
  private readonly positions = new Map<string, { seq: number; epoch?: string }>();
  private readonly lastEventIds = new Map<string, string>();
  private readonly open = new Set<{ close(): void }>();
  private durableTurn = 0;

  constructor(private readonly o: ChurnOptions) {
    this.rand = rng(o.seed);
  }

  start(): void {
    for (let i = 0; i < this.o.wsSlots; i++) this.loops.push(this.loop(() => this.wsSession(i)));
    for (let i = 0; i < this.o.sseSlots; i++) this.loops.push(this.loop(() => this.sseSession(i)));
    this.loops.push(this.loop(() => this.wsPublisher()));
    this.loops.push(this.paced(this.o.httpPubRate, () => this.httpPublish()));
    this.loops.push(this.paced(this.o.readRate, () => this.read()));
  }

  /** Stops every loop and closes what is open; resolves when the loops have ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const c of this.open) c.close();
    await Promise.all(this.loops);
  }

  private err(what: string): void {
    this.counts.errors[what] = (this.counts.errors[what] ?? 0) + 1;
  }
  private pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.rand() * xs.length)]!;
  }
  private between([lo, hi]: [number, number]): number {
    return lo + this.rand() * (hi - lo);
  }
  private wsUrl(): string {
    return this.o.url.replace(/^http/, "ws") + "/ws";
  }

  private async loop(body: () => Promise<void>): Promise<void> {
    while (!this.stopped) {
      try {
        await body();
      } catch (e) {
        this.err(`loop:${(e as NodeJS.ErrnoException).code ?? (e as Error).message.slice(0, 40)}`);
      }
      if (!this.stopped) await delay(50 + this.rand() * 300);
    }
  }

  /** Runs `once` about `perSec` times a second (not overlapping itself beyond four at a time). */
  private async paced(perSec: number, once: () => Promise<void>): Promise<void> {
    if (perSec <= 0) return;
    const inflight = new Set<Promise<void>>();
    while (!this.stopped) {
      if (inflight.size < 4) {
        const p = once()
          .catch((e: unknown) => this.err(`http:${(e as NodeJS.ErrnoException).code ?? (e as Error).message.slice(0, 40)}`))
          .finally(() => inflight.delete(p));
        inflight.add(p);
      }
      await delay((1000 / perSec) * (0.5 + this.rand()));
    }
    await Promise.all(inflight);
  }

  /** Opens a WebSocket from a random source address; resolves once open (rejects on failure). */
  private connect(ip = this.pick(this.o.ips)): Promise<WebSocket> {
    const ws = new WebSocket(this.wsUrl(), { localAddress: ip, handshakeTimeout: 10_000 });
    return new Promise((resolve, reject) => {
      ws.once("open", () => resolve(ws));
      ws.once("unexpected-response", (_req, res) => {
        reject(new Error(`upgrade ${res.statusCode}`));
        ws.terminate();
      });
      ws.once("error", reject);
    });
  }

  /** One subscriber session: connect, subscribe to 1–3 things, hold, close. */
  private async wsSession(slot: number): Promise<void> {
    const kind = slot % 4; // 0 live, 1 resume, 2 durable, 3 presence
    // Durable sessions go round every (user, durable name) pair, so that all of them exist early in the run.
    const combo = kind === 2 ? this.durableTurn++ : 0;
    const durable = DURABLES[combo % DURABLES.length]!;
    const user = `u${Math.floor(combo / DURABLES.length) % USERS}`;
    let ws: WebSocket;
    try {
      ws = await this.connect(kind === 2 ? this.pick(this.o.ips.filter((ip) => userOf(ip) === user)) : undefined);
    } catch (e) {
      this.err(`ws:${(e as Error).message.slice(0, 40)}`);
      return;
    }
    this.counts.wsSessions++;
    const handle = { close: () => ws.terminate() };
    this.open.add(handle);
    const closed = new Promise<void>((r) => ws.once("close", () => r()));
    ws.on("error", () => undefined);
    let nextId = 0;
    const subs = new Map<number, { pattern: string; resume: boolean }>();
    ws.on("message", (d: Buffer) => {
      const f = JSON.parse(d.toString()) as Frame;
      if (f.op === "msg") {
        this.counts.received++;
        const seq = f.seq as number;
        for (const s of subs.values()) {
          const p = s.resume && matches(s.pattern, f.channel as string) ? this.positions.get(s.pattern) : undefined;
          if (p && seq > p.seq) p.seq = seq;
        }
        if (typeof f.durable === "string") {
          if (this.rand() < 0.05) {
            ws.send(JSON.stringify({ op: "nak", seq, delay: 500 }));
            this.counts.naks++;
          } else {
            ws.send(JSON.stringify({ op: "ack", seq }));
            this.counts.acks++;
          }
        }
      } else if (f.op === "ok" && typeof f.id === "number" && subs.has(f.id)) {
        this.counts.subOk++;
        const s = subs.get(f.id)!;
        if (s.resume && typeof f.epoch === "string") {
          const p = this.positions.get(s.pattern) ?? { seq: 0 };
          if (p.epoch !== undefined && p.epoch !== f.epoch) p.seq = 0;
          p.epoch = f.epoch;
          this.positions.set(s.pattern, p);
        }
      } else if (f.op === "err") {
        this.err(`sub:${String(f.code)}`);
      }
    });
    const n = 1 + Math.floor(this.rand() * 3);
    for (let i = 0; i < n && ws.readyState === WebSocket.OPEN; i++) {
      const id = ++nextId;
      if (kind === 2 && i === 0) {
        const d = durable;
        subs.set(id, { pattern: d.channel, resume: false });
        ws.send(JSON.stringify({ op: "sub", id, channel: d.channel, durable: d.name, ack: true, maxInflight: 20 }));
        this.counts.durableBinds++;
      } else if (kind === 3 && i === 0) {
        const room = this.pick(ROOMS);
        subs.set(id, { pattern: room, resume: false });
        ws.send(JSON.stringify({ op: "sub", id, channel: room, presence: true, info: { slot } }));
        this.counts.presenceJoins++;
      } else if (kind === 1) {
        const pattern = this.pick([...CHANNELS, ...WILDCARDS]);
        if (subs.size > 0 && [...subs.values()].some((s) => s.pattern === pattern)) continue;
        const p = this.positions.get(pattern);
        subs.set(id, { pattern, resume: true });
        const from = p && p.seq > 0 ? { seq: p.seq + 1, ...(p.epoch ? { epoch: p.epoch } : {}) } : { last: 5 };
        ws.send(JSON.stringify({ op: "sub", id, channel: pattern, from }));
        this.counts.resumes++;
      } else {
        const pattern = this.pick([...CHANNELS, ...WILDCARDS, ...ROOMS]);
        if ([...subs.values()].some((s) => s.pattern === pattern)) continue;
        subs.set(id, { pattern, resume: false });
        ws.send(JSON.stringify({ op: "sub", id, channel: pattern }));
      }
    }
    const life = this.between(this.o.sessionMs);
    const ended = await Promise.race([delay(life).then(() => false), closed.then(() => true)]);
    if (!ended && kind === 3 && ws.readyState === WebSocket.OPEN) {
      const [first] = subs.values();
      if (first) ws.send(JSON.stringify({ op: "presence", id: ++nextId, channel: first.pattern }));
    }
    if (!ended && ws.readyState === WebSocket.OPEN && this.rand() < 0.3) {
      // Some sessions unsubscribe before they go.
      for (const s of subs.values()) ws.send(JSON.stringify({ op: "unsub", id: ++nextId, channel: s.pattern }));
    }
    if (!ended) {
      if (this.rand() < 0.2) {
        ws.terminate();
        this.counts.wsDropped++;
      } else ws.close(1000);
    }
    await Promise.race([closed, delay(5_000)]);
    if (ws.readyState !== WebSocket.CLOSED) ws.terminate();
    this.open.delete(handle);
  }

  /** One SSE stream: open (resuming with Last-Event-ID when one is known), read for a while, close. */
  private async sseSession(slot: number): Promise<void> {
    const pattern = this.pick([CHANNELS[slot % CHANNELS.length]!, ...WILDCARDS]);
    const last = this.lastEventIds.get(pattern);
    const url = `${this.o.url}/v1/channels/${encodeURIComponent(pattern)}/events${last ? "" : "?last=5"}`;
    let s: Awaited<ReturnType<typeof openStream>>;
    try {
      s = await openStream(url, { headers: last ? { "last-event-id": last } : {}, localAddress: this.pick(this.o.ips) }, (block) => {
        for (const line of block.split("\n")) if (line.startsWith("id: ")) this.lastEventIds.set(pattern, line.slice(4));
        if (block.includes("data: ")) this.counts.received++;
      });
    } catch (e) {
      this.err(`sse:${(e as NodeJS.ErrnoException).code ?? (e as Error).message.slice(0, 40)}`);
      return;
    }
    if (s.status !== 200) {
      this.err(`sse:${s.status}`);
      s.close();
      return;
    }
    this.counts.sseStreams++;
    this.open.add(s);
    await Promise.race([delay(this.between(this.o.sessionMs)), s.ended]);
    s.close();
    this.open.delete(s);
  }

  /** A WS publisher connection that lives a while, publishing at its rate, then is replaced. */
  private async wsPublisher(): Promise<void> {
    const ws = await this.connect();
    const handle = { close: () => ws.terminate() };
    this.open.add(handle);
    ws.on("error", () => undefined);
    const waiting = new Map<string, (f: Frame) => void>();
    ws.on("message", (d: Buffer) => {
      const f = JSON.parse(d.toString()) as Frame;
      if (typeof f.id === "string") waiting.get(f.id)?.(f);
    });
    const until = Date.now() + this.between([this.o.sessionMs[1], this.o.sessionMs[1] * 3]);
    let n = 0;
    while (!this.stopped && Date.now() < until && ws.readyState === WebSocket.OPEN) {
      const id = `p${++n}`;
      const channel = this.rand() < 0.8 ? this.pick(CHANNELS) : this.pick(ROOMS);
      const reply = await new Promise<Frame>((resolve) => {
        const t = setTimeout(() => resolve({ op: "err", code: "timeout" }), 5_000);
        waiting.set(id, (f) => {
          clearTimeout(t);
          resolve(f);
        });
        ws.send(JSON.stringify({ op: "pub", id, channel, data: { n, t: Date.now() } }));
      });
      waiting.delete(id);
      if (reply.op === "ok") this.counts.publishedWs++;
      else this.err(`pub:${String(reply.code)}`);
      await delay((1000 / this.o.wsPubRate) * (0.5 + this.rand()));
    }
    ws.close(1000);
    this.open.delete(handle);
  }

  /** One HTTP publish: to one channel, or a batch of three (every fourth). */
  private async httpPublish(): Promise<void> {
    const ip = this.pick(this.o.ips);
    const headers = { "content-type": "application/json" };
    if (this.rand() < 0.25) {
      const items = [0, 1, 2].map(() => ({ channel: this.pick(CHANNELS), data: { t: Date.now() } }));
      const r = await request(`${this.o.url}/v1/publish`, { method: "POST", body: JSON.stringify(items), headers, localAddress: ip });
      if (r.status === 200) this.counts.publishedHttp += items.length;
      else this.err(`http-batch:${r.status}`);
    } else {
      const r = await request(`${this.o.url}/v1/publish/${this.pick(CHANNELS)}`, {
        method: "POST",
        body: JSON.stringify({ t: Date.now() }),
        headers,
        localAddress: ip,
      });
      if (r.status === 201) this.counts.publishedHttp++;
      else this.err(`http-pub:${r.status}`);
    }
  }

  /** One read: the history of a channel (last N or from a seq), or the members of a room. */
  private async read(): Promise<void> {
    const ip = this.pick(this.o.ips);
    if (this.rand() < 0.7) {
      const channel = this.pick(CHANNELS);
      const p = this.positions.get(channel);
      const q = p && p.seq > 20 && this.rand() < 0.5 ? `from_seq=${p.seq - 20}&limit=20` : `last=${1 + Math.floor(this.rand() * 20)}`;
      const r = await request(`${this.o.url}/v1/channels/${channel}/messages?${q}`, { localAddress: ip });
      if (r.status === 200) this.counts.historyReads++;
      else this.err(`history:${r.status}`);
    } else {
      const r = await request(`${this.o.url}/v1/channels/${this.pick(ROOMS)}/presence`, { localAddress: ip });
      if (r.status === 200) this.counts.presenceReads++;
      else this.err(`presence:${r.status}`);
    }
  }
}
