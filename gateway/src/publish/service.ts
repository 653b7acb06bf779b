import type { Broker, MessageExtra, PublishResult } from "../broker/broker.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics/metrics.js";
import { ErrorCode } from "../protocol/codes.js";
import { brokerFailure, GatewayError } from "../errors.js";
import { isBadItem, type BadItem, type PublishItem } from "../protocol/batch.js";
import type { PublisherInfo } from "../protocol/publisher-info.js";
import type { Tags } from "../protocol/tags.js";

/** One item's result in a batch, in the item's place: stored (seq, duplicate), or why not. */
export type ItemResult = { seq: number; duplicate: boolean } | { error: string; message: string; temporary: boolean };

export type PublishVia = "ws" | "http";

/** A payload ready to store: JSON, or bytes with their content type. */
type Prepared = { payload: Uint8Array; type: string | undefined };

/** Who publishes, as the authorization chain identified them (auth/access.ts `publishedBy`): the publish hook is told. */
export type PublishedBy = Readonly<{
  /** The named user, or null (nobody named the publisher). */
  user: string | null;
  /** The WebSocket's client id; none over HTTP. */
  client?: string;
  /** The WebSocket's codec (`json`, `msgpack`), for a Centrifugo-format hook's `protocol`. */
  protocol?: string;
  ip: string;
  /** The connect hook's `info`. */
  info?: unknown;
  /** The token's `meta` claim: a Centrifugo-format publish hook's `meta` (else `info`). */
  meta?: unknown;
  /** An API key: the application's backend. */
  trusted: boolean;
  /**
   * A WebSocket client's identity as stored with what it publishes on `channel` (the `Fanout-Publisher` header:
   * the Centrifuge door's publication `info`); absent over HTTP and the server API, which store none.
   */
  publisherOn?: (channel: string) => PublisherInfo | undefined;
}>;

/**
 * What is asked before a publish is stored (the publish hook, auth/hooks.ts): the data to store instead, or
 * undefined to store it as sent; rejects with a GatewayError to refuse it.
 */
export type PublishGate = {
  /**
   * `data` reads the published value: a JSON value, or for an HTTP body stored as sent its text as stored
   * (`StoredJson`: the hook is sent those bytes, so that it judges what readers will get, duplicate keys and
   * long numbers included); with `type`, a binary payload of that content type, whose `data` is its base64.
   */
  askPublish(by: PublishedBy, channel: string, data: () => unknown, type?: string): Promise<Replacement | undefined>;
};

/** What the publish hook stores instead: a JSON value, or bytes (a Centrifugo-format hook's `b64data`). */
export type Replacement = { data: unknown } | { bytes: Uint8Array };

/** One JSON value as the text that will be stored (one line, checked), to be passed on verbatim. */
export class StoredJson {
  constructor(readonly text: string) {}
}

/**
 * Publishing, one service for both doors (WebSocket `pub` frames and `POST /v1/publish`): size limit,
 * broker state, the publish hook (PUBLISH_HOOK_URL: every door and batch item passes here, after the
 * authorization chain), the broker's publish with its dedup id, metrics by door and result, and one error
 * scheme (GatewayError: wire code, HTTP status, temporary).
 */
export class PublishService {
  constructor(
    private readonly maxPayloadBytes: number,
    private readonly broker: Broker,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    /** The publish hook, when PUBLISH_HOOK_URL is set. */
    private readonly gate?: PublishGate,
  ) {}

  /**
   * Publishes one JSON value with an optional dedup id. `encoded`, when given, is stored as it is instead: the
   * caller checked it is one line of JSON (an HTTP body as sent). With `type`, `data` is bytes (a Uint8Array)
   * stored as they are with that content type: a binary payload. `tags` are stored with it (the server API's).
   */
  async publish(
    via: PublishVia,
    by: PublishedBy,
    channel: string,
    data: unknown,
    msgId?: string,
    encoded?: Uint8Array,
    ttl?: string,
    type?: string,
    tags?: Tags,
  ): Promise<PublishResult> {
    const p = await this.prepare(via, by, channel, data, encoded, type);
    return this.store(via, channel, p.payload, msgId, ttl, p.type, extraOf(by, channel, tags));
  }

  /**
   * The payload to store, once the size, the broker's state and the publish hook allow it (the hook may
   * replace it). Only this waits: `store` then hands it to the broker in the same turn as it is called.
   */
  private async prepare(via: PublishVia, by: PublishedBy, channel: string, data: unknown, encoded?: Uint8Array, type?: string): Promise<Prepared> {
    // Bytes are stored as they are; JSON is re-encoded so that the stored payload is compact JSON on one line
    // (the fan-out splices it in as it is).
    let payload = type !== undefined ? (data as Uint8Array) : (encoded ?? Buffer.from(JSON.stringify(data)));
    let stored = type;
    try {
      this.checkSize(payload);
      if (!this.broker.isConnected()) throw new GatewayError(ErrorCode.BrokerUnavailable, "broker is not connected; retry");
      if (this.gate) {
        // A body stored as sent was checked to be one line of JSON: the hook gets that text, not a re-encoding of
        // it (JSON.parse would keep the last of duplicate keys and round numbers past 2^53); bytes go in base64.
        const bytes = payload;
        const sent =
          type !== undefined
            ? () => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64")
            : encoded
              ? () => new StoredJson(Buffer.from(encoded).toString("utf8"))
              : () => data;
        const replaced = await this.gate.askPublish(by, channel, sent, type);
        // A replacement is a JSON value, whatever was published; bytes keep the published content type, or are octet-stream.
        if (replaced && "bytes" in replaced) {
          this.checkSize((payload = replaced.bytes));
          stored = type ?? "application/octet-stream";
        } else if (replaced) {
          this.checkSize((payload = Buffer.from(JSON.stringify(replaced.data))));
          stored = undefined;
        }
      }
      return { payload, type: stored };
    } catch (e) {
      this.counters(via).err.inc();
      throw e;
    }
  }

  /** Hands a prepared payload to the broker (synchronously up to the broker's publish) and counts the result. */
  private async store(
    via: PublishVia,
    channel: string,
    payload: Uint8Array,
    msgId?: string,
    ttl?: string,
    type?: string,
    extra?: MessageExtra,
  ): Promise<PublishResult> {
    const { ok, dup, err } = this.counters(via);
    const end = this.metrics.publishDuration.startTimer();
    try {
      const r = await this.broker.publish(channel, payload, msgId, ttl, type, extra);
      end();
      (r.duplicate ? dup : ok).inc();
      return r;
    } catch (e) {
      err.inc();
      if (this.log.isLevelEnabled("debug")) this.log.debug({ err: e, channel }, "publish failed");
      throw brokerFailure(e, this.broker.isConnected(), "publish");
    }
  }

  private counters(via: PublishVia) {
    const m = this.metrics;
    return via === "ws"
      ? { ok: m.publishOk, dup: m.publishDuplicate, err: m.publishError }
      : { ok: m.httpPublishOk, dup: m.httpPublishDuplicate, err: m.httpPublishError };
  }

  private checkSize(payload: Uint8Array): void {
    if (payload.length > this.maxPayloadBytes)
      throw new GatewayError(ErrorCode.PayloadTooLarge, `payload is ${payload.length} bytes; the limit is ${this.maxPayloadBytes}`);
  }

  /**
   * Publishes a batch pipelined: every item is authorized first (`allow` rejects with a GatewayError) and
   * passes the publish hook, then all allowed ones are handed to the broker in item order in one synchronous pass (one connection: the
   * stream stores them in that order), and their acks are awaited together. One result per item, in order.
   */
  async publishBatch(
    via: PublishVia,
    by: PublishedBy,
    items: readonly (PublishItem | BadItem)[],
    allow: (item: PublishItem) => Promise<void>,
  ): Promise<ItemResult[]> {
    // Every wait (the chain, the publish hook) happens here, so that the broker still gets the items in order.
    const checked = await Promise.all(
      items.map(async (it): Promise<{ item: PublishItem; prepared: Prepared } | GatewayError> => {
        if (isBadItem(it)) return new GatewayError(it.code, it.message);
        try {
          await allow(it);
          return { item: it, prepared: await this.prepare(via, by, it.channel, it.data, undefined, it.type) };
        } catch (e) {
          if (e instanceof GatewayError) return e;
          throw e;
        }
      }),
    );
    const pending = checked.map((it) =>
      it instanceof GatewayError
        ? Promise.reject(it)
        : this.store(via, it.item.channel, it.prepared.payload, it.item.msgId, it.item.ttl, it.prepared.type, extraOf(by, it.item.channel, it.item.tags)),
    );
    const settled = await Promise.allSettled(pending);
    return settled.map((r) => {
      if (r.status === "fulfilled") return { seq: r.value.seq, duplicate: r.value.duplicate };
      const e = r.reason instanceof GatewayError ? r.reason : brokerFailure(r.reason, this.broker.isConnected(), "publish");
      return { error: e.code, message: e.message, temporary: e.temporary };
    });
  }
}

/** What is stored with a message besides its payload: its WebSocket publisher on `channel`, its tags; undefined when nothing. */
function extraOf(by: PublishedBy, channel: string, tags: Tags | undefined): MessageExtra | undefined {
  const publisher = by.publisherOn?.(channel);
  if (publisher === undefined && tags === undefined) return undefined;
  return { ...(publisher ? { publisher } : {}), ...(tags ? { tags } : {}) };
}
