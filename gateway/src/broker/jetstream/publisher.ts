import { createInbox, headers, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { GatewayError } from "../../errors.js";
import { ErrorCode } from "../../protocol/codes.js";
import type { PublishResult } from "../broker.js";
import { CONTENT_TYPE_HEADER } from "../../protocol/content-type.js";
import { PUBLISHER_HEADER, publisherHeader } from "../../protocol/publisher-info.js";
import { TAGS_HEADER, tagsHeader } from "../../protocol/tags.js";
import type { MessageExtra } from "../broker.js";
import { parsePubAck, type PubAck } from "./pub-ack.js";
import { guarded } from "../../util/guarded.js";

type Pending = { resolve(r: PublishResult): void; reject(e: Error): void; deadline: number; subject: string };

/** How often unanswered publishes are looked for (their timeout is checked this coarsely). */
const SWEEP_MS = 250;

/**
 * JetStream publishes on nats.js' core connection with one wildcard reply subscription: each PUB carries a
 * reply subject of ours and the stream's PubAck comes back there. nats.js' `js.publish` does the same through
 * one request per publish: a RequestOne with a timer of its own and, on every success, an Error object built
 * (with its stack) and dropped when the request cancels itself — 13 % of a worker's busy time under
 * WebSocket publishing. Here a publish is a map entry; timeouts are found by one sweep.
 *
 * Failures: a PubAck with an `error` is a GatewayError (`broker_error`; permanent when the server refused the
 * message with a 4xx, as brokerFailure decides for nats.js' errors); no responders (no stream takes the
 * subject) and no answer in time are plain errors, which the publish service turns into `broker_error` or
 * `broker_unavailable` by the connection's state.
 */
export class JsPublisher {
  private readonly prefix = createInbox();
  private readonly sub: Subscription;
  private readonly pending = new Map<string, Pending>();
  /** Round trips of replyRoundTrip waiting for their message. */
  private readonly probes = new Map<string, () => void>();
  private next = 0;
  private sweeper?: NodeJS.Timeout;

  /** `onTimeout`: told of every publish that got no acknowledgement in time, with its subject (the broker's warning). */
  constructor(
    private readonly nc: NatsConnection,
    private readonly timeoutMs: number,
    private readonly onTimeout?: (subject: string) => void,
  ) {
    this.sub = nc.subscribe(`${this.prefix}.*`, { callback: guarded("publish ack", (err, m) => (err ? undefined : this.onReply(m))) });
  }

  /**
   * Publishes to the stream's `subject`; resolves with its seq (and whether the msgId was a duplicate). `type`:
   * a binary payload's content type, stored in its `Fanout-Content-Type` header; `extra`: the WebSocket client
   * publishing, in its `Fanout-Publisher` header, and the publication's tags, in `Fanout-Tags`.
   */
  publish(subject: string, payload: Uint8Array, msgId?: string, ttl?: string, type?: string, extra?: MessageExtra): Promise<PublishResult> {
    const token = (++this.next).toString(36);
    return new Promise<PublishResult>((resolve, reject) => {
      this.pending.set(token, { resolve, reject, deadline: Date.now() + this.timeoutMs, subject });
      this.sweeper ??= setInterval(() => this.sweep(), SWEEP_MS).unref();
      try {
        let h: ReturnType<typeof headers> | undefined;
        if (msgId !== undefined) {
          h = headers();
          h.set("Nats-Msg-Id", msgId);
        }
        if (ttl !== undefined) {
          h ??= headers();
          h.set("Nats-TTL", ttl);
        }
        if (type !== undefined) {
          h ??= headers();
          h.set(CONTENT_TYPE_HEADER, type);
        }
        if (extra?.publisher !== undefined) {
          h ??= headers();
          h.set(PUBLISHER_HEADER, publisherHeader(extra.publisher));
        }
        if (extra?.tags !== undefined) {
          h ??= headers();
          h.set(TAGS_HEADER, tagsHeader(extra.tags));
        }
        this.nc.publish(subject, payload, h ? { reply: `${this.prefix}.${token}`, headers: h } : { reply: `${this.prefix}.${token}` });
      } catch (e) {
        this.pending.delete(token);
        reject(e instanceof Error ? e : new Error(String(e)));
      }
    });
  }

  /** Unanswered publishes (tests and the curious). */
  get inFlight(): number {
    return this.pending.size;
  }

  /** Whether the acknowledgements' reply subscription is still open. */
  get listening(): boolean {
    return !this.sub.isClosed();
  }

  /**
   * Whether a message sent to the acknowledgements' reply subject comes back within `timeoutMs`: the server
   * routes replies to this connection (the ack-timeout warning asks, to tell a lost reply path from a stream
   * that does not answer). Its token (`rt-<n>`) is one no publish uses (theirs are base 36).
   */
  replyRoundTrip(timeoutMs: number): Promise<boolean> {
    const token = `rt-${++this.next}`;
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.probes.delete(token);
        resolve(false);
      }, timeoutMs);
      this.probes.set(token, () => {
        this.probes.delete(token);
        clearTimeout(timer);
        resolve(true);
      });
      this.nc.publish(`${this.prefix}.${token}`);
    });
  }

  close(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
    this.sub.unsubscribe();
    for (const p of this.pending.values()) p.reject(new Error("connection closed before the publish was acknowledged"));
    this.pending.clear();
    this.probes.clear();
  }

  private onReply(m: Msg): void {
    const token = m.subject.slice(this.prefix.length + 1);
    const p = this.pending.get(token);
    if (!p) return this.probes.get(token)?.(); // a round trip's, or answered after its timeout
    this.pending.delete(token);
    if (m.data.length === 0 && m.headers?.code === 503) return p.reject(new Error("no JetStream stream takes this subject (no responders)"));
    let ack: PubAck;
    try {
      ack = parsePubAck(m.data);
    } catch {
      return p.reject(new Error("the publish acknowledgement is not JSON"));
    }
    if (ack.error) {
      const status = ack.error.code ?? 500;
      return p.reject(
        new GatewayError(ErrorCode.BrokerError, `publish failed: ${ack.error.description ?? "JetStream error"} (${ack.error.err_code ?? status})`, {
          temporary: !(status >= 400 && status < 500),
        }),
      );
    }
    if (typeof ack.seq !== "number" || !ack.stream) return p.reject(new Error("invalid publish acknowledgement"));
    p.resolve({ seq: ack.seq, duplicate: ack.duplicate === true });
  }

  private sweep(): void {
    const now = Date.now();
    // Entries are in the order they were sent, with the same timeout: the first one not yet due ends the sweep.
    for (const [token, p] of this.pending) {
      if (p.deadline > now) break;
      this.pending.delete(token);
      p.reject(new Error(`no acknowledgement within ${this.timeoutMs} ms`));
      this.onTimeout?.(p.subject);
    }
    if (this.pending.size === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }
}
