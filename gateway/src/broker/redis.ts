import { Redis, type RedisOptions } from "ioredis";
import type { Logger } from "../log.js";
import type { Broker, BrokerEvent, BrokerMessage, LiveFeed, PublishResult } from "./broker.js";
import { isWildcard, matches } from "../protocol/channel.js";
import { GatewayError } from "../errors.js";
import { ErrorCode } from "../protocol/codes.js";
import { RedisBus } from "./redis-bus.js";

export type RedisBrokerOptions = {
  url: string;
  /** Channel `orders.eu` is Redis channel `<prefix>.orders.eu`, as on JetStream. */
  subjectPrefix: string;
  /** A repeated msgId within this window is published once (the JetStream duplicate window). */
  duplicateWindowMs: number;
  name: string;
  log: Logger;
  commandTimeoutMs?: number;
};

/**
 * Publishes atomically: dedup check, the next seq of the gateway's one counter, Redis server time, PUBLISH
 * of an envelope `fgw1 <seq> <ts µs> <payload>`, and the msgId marker. Scripts run one at a time and Redis
 * delivers pub/sub messages to each connection in execution order, so seq increases along every
 * subscription (with gaps for other channels), exactly as a JetStream stream sequence does.
 * KEYS: seq counter, msgId marker ('' for none). ARGV: Redis channel, payload, window ms.
 */
const PUBLISH_LUA = `
if KEYS[2] ~= '' then
  local prev = redis.call('GET', KEYS[2])
  if prev then return {tonumber(prev), 1} end
end
local seq = redis.call('INCR', KEYS[1])
local t = redis.call('TIME')
redis.call('PUBLISH', ARGV[1], string.format('fgw1 %d %s%06d ', seq, t[1], tonumber(t[2])) .. ARGV[2])
if KEYS[2] ~= '' then redis.call('SET', KEYS[2], seq, 'PX', ARGV[3]) end
return {seq, 0}
`;

const ENVELOPE = Buffer.from("fgw1 ");

type Handler = { pattern: string; onMessage: (m: BrokerMessage) => void };
/** One SUBSCRIBE (exact channel) or PSUBSCRIBE (glob) on the shared subscriber connection. */
type Registration = { kind: "s" | "p"; target: string; handlers: Set<Handler>; ready: Promise<unknown> };

type PublishingRedis = Redis & { fgwPublish(seqKey: string, idKey: string, channel: string, payload: Buffer, windowMs: number): Promise<[number, number]> };

/** Escapes Redis glob specials inside a literal token (tokens never hold `*`, but may hold `?`, `[`, `]`, `\`). */
const globEscape = (s: string): string => s.replace(/[?[\]\\*]/g, "\\$&");

/**
 * The Redis glob for a NATS pattern. It over-matches (`*` in a glob spans dots too), so deliveries are
 * filtered with `matches()`: `orders.*` → `ev.orders.*`, `orders.>` → `ev.orders.?*`, `*.eu` → `ev.*.eu`.
 */
export function redisGlob(prefixDot: string, pattern: string): string {
  const tokens = pattern.split(".").map((t) => (t === "*" ? "*" : t === ">" ? "?*" : globEscape(t)));
  return globEscape(prefixDot) + tokens.join(".");
}

/** Splits a delivery into seq, ts and payload; a message PUBLISHed by something else gets seq 0 and receive time. */
export function parseEnvelope(raw: Buffer): { seq: number; ts: number; payload: Buffer } {
  if (raw.length < ENVELOPE.length + 4 || raw.compare(ENVELOPE, 0, ENVELOPE.length, 0, ENVELOPE.length) !== 0) {
    return { seq: 0, ts: Date.now(), payload: raw };
  }
  let i = ENVELOPE.length;
  let seq = 0;
  for (let c = raw[i]; c !== undefined && c >= 0x30 && c <= 0x39; c = raw[++i]) seq = seq * 10 + (c - 0x30);
  if (raw[i] !== 0x20) return { seq: 0, ts: Date.now(), payload: raw };
  let us = 0;
  for (let c = raw[++i]; c !== undefined && c >= 0x30 && c <= 0x39; c = raw[++i]) us = us * 10 + (c - 0x30);
  if (raw[i] !== 0x20) return { seq: 0, ts: Date.now(), payload: raw };
  return { seq, ts: us / 1000, payload: raw.subarray(i + 1) };
}

/**
 * Redis pub/sub broker, the users' old baseline behind the same protocol: live delivery only (no replay,
 * no durable consumers, no history). One subscriber connection per worker carries one SUBSCRIBE or
 * PSUBSCRIBE per distinct pattern; publishing uses a second connection. Messages published while a
 * worker is disconnected from Redis are lost for it — that is what pub/sub is.
 */
export class RedisBroker implements Broker {
  readonly kind = "redis" as const;
  private readonly prefixDot: string;
  private readonly seqKey: string;
  private readonly registrations = new Map<string, Registration>();
  private listeners: ((e: BrokerEvent) => void)[] = [];
  private connected = true;
  /** Control requests between workers (control/): their own Redis channels on the same two connections. */
  readonly bus: RedisBus;

  private constructor(
    private readonly pub: PublishingRedis,
    private readonly sub: Redis,
    private readonly opts: RedisBrokerOptions,
  ) {
    this.prefixDot = `${opts.subjectPrefix}.`;
    this.seqKey = `fgw:${opts.subjectPrefix}:seq`;
    this.bus = new RedisBus(pub, sub);
    sub.on("messageBuffer", (channel: Buffer, message: Buffer) => {
      const name = channel.toString();
      if (!this.bus.deliver(name, message)) this.dispatch(`s:${name}`, channel, message);
    });
    sub.on("pmessageBuffer", (glob: string, channel: Buffer, message: Buffer) => this.dispatch(`p:${glob}`, channel, message));
    for (const c of [pub, sub]) {
      c.on("close", () => this.updateState());
      c.on("ready", () => this.updateState());
    }
  }

  static async connect(opts: RedisBrokerOptions): Promise<RedisBroker> {
    const base: RedisOptions = {
      connectionName: opts.name,
      lazyConnect: true,
      retryStrategy: (times) => Math.min(50 * times, 1_000),
      reconnectOnError: () => false,
    };
    const pub = new Redis(opts.url, {
      ...base,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: opts.commandTimeoutMs ?? 5_000,
    }) as PublishingRedis;
    const sub = new Redis(opts.url, { ...base, autoResubscribe: true });
    pub.defineCommand("fgwPublish", { numberOfKeys: 2, lua: PUBLISH_LUA });
    let reported = false;
    for (const c of [pub, sub]) {
      c.on("error", (e: Error) => {
        // ioredis reports every failed reconnect attempt; one warning per outage is enough.
        if (!reported) opts.log.warn({ err: e.message, url: redactUrl(opts.url) }, "redis connection error");
        reported = true;
      });
      c.on("ready", () => {
        reported = false;
      });
    }
    await Promise.all([pub, sub].map((c) => waitReady(c)));
    return new RedisBroker(pub, sub, opts);
  }

  private updateState(): void {
    const now = this.pub.status === "ready" && this.sub.status === "ready";
    if (now === this.connected) return;
    this.connected = now;
    this.emit(now ? { type: "reconnected" } : { type: "disconnected" });
  }

  private emit(e: BrokerEvent): void {
    for (const l of this.listeners) l(e);
  }

  onEvent(listener: (e: BrokerEvent) => void): void {
    this.listeners.push(listener);
  }

  epochOf(): undefined {
    return undefined;
  }

  epochReader(): () => undefined {
    return () => undefined;
  }

  isConnected(): boolean {
    return this.pub.status === "ready" && this.sub.status === "ready";
  }

  async publish(channel: string, payload: Uint8Array, msgId?: string, _ttl?: string, type?: string): Promise<PublishResult> {
    // Redis pub/sub carries a payload and nothing beside it: a content type would need a framing of its own.
    if (type !== undefined)
      throw new GatewayError(
        ErrorCode.UnsupportedByBroker,
        "binary payloads (bytes with a content type) need BROKER=jetstream; the Redis broker carries JSON only",
      );
    if (!this.isConnected()) throw new GatewayError(ErrorCode.BrokerUnavailable, "Redis is not connected");
    const idKey = msgId ? `fgw:${this.opts.subjectPrefix}:msgid:${msgId}` : "";
    const body = Buffer.isBuffer(payload) ? payload : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
    const [seq, dup] = await this.pub.fgwPublish(this.seqKey, idKey, this.prefixDot + channel, body, this.opts.duplicateWindowMs);
    return { seq: Number(seq), duplicate: dup === 1 };
  }

  async live(pattern: string, onMessage: (m: BrokerMessage) => void): Promise<LiveFeed> {
    if (!this.isConnected()) throw new GatewayError(ErrorCode.BrokerUnavailable, "Redis is not connected");
    const kind = isWildcard(pattern) ? "p" : "s";
    const target = kind === "p" ? redisGlob(this.prefixDot, pattern) : this.prefixDot + pattern;
    const key = `${kind}:${target}`;
    let reg = this.registrations.get(key);
    if (!reg) {
      const created: Registration = { kind, target, handlers: new Set(), ready: kind === "p" ? this.sub.psubscribe(target) : this.sub.subscribe(target) };
      this.registrations.set(key, created);
      created.ready.catch(() => {
        if (this.registrations.get(key) === created && created.handlers.size === 0) this.registrations.delete(key);
      });
      reg = created;
    }
    // Redis numbers every publish (the gateway's counter): the feed's position is the newest it delivered.
    let pos = 0;
    const handler: Handler = {
      pattern,
      onMessage: (m) => {
        if (m.seq > pos) pos = m.seq;
        onMessage(m);
      },
    };
    reg.handlers.add(handler);
    const r = reg;
    try {
      await r.ready;
    } catch (e) {
      r.handlers.delete(handler);
      if (r.handlers.size === 0 && this.registrations.get(key) === r) this.registrations.delete(key);
      throw e;
    }
    return { stop: () => this.unregister(key, r, handler), position: () => pos };
  }

  private async unregister(key: string, reg: Registration, handler: Handler): Promise<void> {
    reg.handlers.delete(handler);
    if (reg.handlers.size > 0 || this.registrations.get(key) !== reg) return;
    this.registrations.delete(key);
    if (this.sub.status !== "ready") return; // ioredis forgets it too: only live subscriptions are resent
    await (reg.kind === "p" ? this.sub.punsubscribe(reg.target) : this.sub.unsubscribe(reg.target));
  }

  private dispatch(key: string, redisChannel: Buffer, raw: Buffer): void {
    const reg = this.registrations.get(key);
    if (!reg) return;
    const name = redisChannel.toString();
    if (!name.startsWith(this.prefixDot)) return;
    const channel = name.slice(this.prefixDot.length);
    let parsed: ReturnType<typeof parseEnvelope> | undefined;
    for (const h of reg.handlers) {
      if (reg.kind === "p" && !matches(h.pattern, channel)) continue;
      parsed ??= parseEnvelope(raw);
      try {
        h.onMessage({ channel, seq: parsed.seq, ts: parsed.ts, payload: parsed.payload });
      } catch (e) {
        this.opts.log.error({ err: e, pattern: h.pattern }, "fan-out callback failed");
      }
    }
  }

  async close(): Promise<void> {
    this.registrations.clear();
    await Promise.all(
      [this.sub, this.pub].map(async (c) => {
        if (c.status === "end") return;
        try {
          await c.quit();
        } catch {
          c.disconnect();
        }
      }),
    );
  }
}

/** Connects, retrying until Redis answers (like the first NATS connect, which waits). */
async function waitReady(c: Redis): Promise<void> {
  const status = (): string => c.status;
  c.connect().catch(() => undefined); // failures are retried by the retry strategy and reported as "error"
  while (status() !== "ready") {
    await new Promise<void>((resolve) => {
      const done = (): void => {
        c.off("ready", done);
        c.off("end", done);
        resolve();
      };
      c.once("ready", done);
      c.once("end", done);
    });
    if (status() === "end") c.connect().catch(() => undefined);
  }
}

const redactUrl = (url: string): string => url.replace(/\/\/[^@/]*@/, "//***@");
