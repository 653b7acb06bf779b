import { AckPolicy, type ConsumerConfig, type JetStreamManager } from "@nats-io/jetstream";
import { createInbox, nanos, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { randomBytes } from "node:crypto";
import type { Logger } from "../log.js";
import type { BrokerMessage, Reader, ReaderHandlers } from "./broker.js";

export type PullReaderOptions = {
  nc: NatsConnection;
  jsm: JetStreamManager;
  stream: string;
  /** NATS filter subject of the pattern. */
  subject: string;
  toChannel: (subject: string) => string;
  /** Deliver policy and start of the consumer. */
  position: Partial<ConsumerConfig>;
  /** Upper bound of the bytes requested and not yet received (what lands on a paused socket at most). */
  windowBytes: number;
  /** Upper bound of the messages requested and not yet received. */
  maxMessages: number;
  log: Logger;
};

/** Names of catch-up consumers start with this. */
export const READER_PREFIX = "fgwr";

/** How long one pull request stays open on the server (a 408 then ends it and a new one is sent). */
const PULL_EXPIRES_MS = 30_000;
/** Idle pull consumers are removed by the server after this, should stop() never reach it. */
const INACTIVE_THRESHOLD_MS = 60_000;
/** Size assumed per message before any has arrived (the first pull is sized by it). */
const INITIAL_SIZE_GUESS = 1_024;
const MIN_WINDOW = 16;

/**
 * A catch-up reader: an ephemeral, in-memory, ack-none pull consumer read through one core subscription.
 * Same guarantees as an ordered consumer (in order, no gaps: a consumer-sequence gap or a lost consumer is
 * reported through `onLost`, and the owner reopens from the last seq it wrote), without its per-message
 * costs: seq, timestamp and pending come straight from the reply subject, and nothing else is parsed.
 *
 * Flow control is by pulls: the reader keeps a window of requested messages sized by bytes, `pause()` stops
 * asking for more (what is already requested still arrives, at most one window), `resume()` asks again.
 * Nothing is dropped or read twice, unlike stopping and reopening a consumer.
 */
export class PullReader implements Reader {
  readonly initialPending: number;
  private readonly sub: Subscription;
  private readonly ackPrefix: string;
  private readonly nextSubject: string;
  private readonly inbox: string;
  private outstanding = 0;
  private paused = false;
  private stopped = false;
  private lastDseq = 0;
  private avgSize = INITIAL_SIZE_GUESS;
  /** Cursor of the reply-subject parser. */
  private pos = 0;
  /** A filter without wildcards has one channel: no subject to decode per message. */
  private readonly channel?: string;

  private constructor(
    private readonly o: PullReaderOptions,
    private readonly name: string,
    inbox: string,
    initialPending: number,
    private readonly h: ReaderHandlers,
  ) {
    this.initialPending = initialPending;
    this.inbox = inbox;
    this.ackPrefix = `$JS.ACK.${o.stream}.${name}.`;
    this.nextSubject = `$JS.API.CONSUMER.MSG.NEXT.${o.stream}.${name}`;
    if (!/(^|\.)[*>](\.|$)/.test(o.subject)) this.channel = o.toChannel(o.subject);
    this.sub = o.nc.subscribe(inbox, { callback: (err, m) => (err ? this.lost(err) : this.onMsg(m)) });
  }

  static async open(o: PullReaderOptions, h: ReaderHandlers): Promise<PullReader> {
    const inbox = createInbox();
    // Short: the name is in every message's reply subject, which nats.js scans byte by byte (72 random bits).
    const name = `${READER_PREFIX}${randomBytes(9).toString("base64url")}`;
    const ci = await o.jsm.consumers.add(o.stream, {
      name, filter_subjects: [o.subject], ack_policy: AckPolicy.None, mem_storage: true, num_replicas: 1,
      inactive_threshold: nanos(INACTIVE_THRESHOLD_MS), ...o.position,
    });
    const r = new PullReader(o, name, inbox, ci.num_pending, h);
    r.pull();
    return r;
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.pull();
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.sub.unsubscribe();
    await this.o.jsm.consumers.delete(this.o.stream, this.name).catch(() => undefined);
  }

  /** Tops the window up once three quarters of it have arrived (fewer, larger pulls; each is a syscall). */
  private pull(): void {
    if (this.stopped || this.paused) return;
    const window = Math.max(MIN_WINDOW, Math.min(this.o.maxMessages, Math.floor(this.o.windowBytes / this.avgSize)));
    if (this.outstanding > window >> 2) return;
    const batch = window - this.outstanding;
    this.outstanding += batch;
    this.o.nc.publish(this.nextSubject, JSON.stringify({ batch, expires: nanos(PULL_EXPIRES_MS) }), { reply: this.inbox });
  }

  private onMsg(m: Msg): void {
    if (this.stopped) return;
    const reply = m.reply;
    if (!reply) return this.onStatus(m);
    let seq: number, dseq: number, ts: number, pending: number;
    if (reply.startsWith(this.ackPrefix)) {
      // $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<ns timestamp>.<pending>
      this.pos = this.ackPrefix.length;
      this.uint(reply);
      seq = this.uint(reply);
      dseq = this.uint(reply);
      ts = this.uint(reply);
      pending = this.uint(reply);
    } else {
      // The longer form with domain and account hash: $JS.ACK.<domain>.<hash>.<stream>.<consumer>.<delivered>…
      const t = reply.split(".");
      const b = t.length >= 12 ? 7 : 5;
      [seq, dseq, ts, pending] = [Number(t[b]), Number(t[b + 1]), Number(t[b + 2]), Number(t[b + 3])];
    }
    if (dseq !== this.lastDseq + 1) return this.lost(new Error(`consumer sequence gap: expected ${this.lastDseq + 1}, got ${dseq}`));
    this.lastDseq = dseq;
    const payload = m.data;
    this.avgSize += (payload.length + reply.length + 64 - this.avgSize) / 16;
    this.outstanding--;
    this.h.onMessage({ channel: this.channel ?? this.o.toChannel(m.subject), seq, ts: Math.round(ts / 1_000) / 1_000, payload }, pending);
    this.pull();
  }

  /** Status messages: 100 heartbeat, 404/408 a request ended with messages still owed, 409/503 consumer trouble. */
  private onStatus(m: Msg): void {
    const h = m.headers;
    const code = h?.code ?? 0;
    if (code === 404 || code === 408) {
      this.outstanding = Math.max(0, this.outstanding - Number(h?.get("Nats-Pending-Messages") || 0));
      this.pull();
    } else if (code !== 100) {
      this.lost(new Error(`pull consumer ${this.name}: ${code} ${h?.description ?? "no status"}`));
    }
  }

  private lost(err: Error): void {
    if (this.stopped) return;
    void this.stop();
    this.o.log.debug({ err, consumer: this.name }, "catch-up reader lost");
    this.h.onLost(err);
  }

  /** Parses the unsigned integer at the cursor (a float past 2^53: ns timestamps keep ~µs precision). */
  private uint(s: string): number {
    let i = this.pos;
    let v = 0;
    for (;;) {
      const c = s.charCodeAt(i++);
      if (!(c >= 48 && c <= 57)) break;
      v = v * 10 + (c - 48);
    }
    this.pos = i;
    return v;
  }
}
