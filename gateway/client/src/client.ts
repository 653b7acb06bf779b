import { Connection } from "./connection.js";
import { toMessage } from "./delivery.js";
import { GatewayError, messageOf, wireError } from "./errors.js";
import { Emitter, type GatewayEvent, type GatewayEventType } from "./events.js";
import { parseOptions, type ClientOptions, type GatewayClientOptions } from "./options.js";
import { readHistory } from "./history.js";
import { presenceEvent, presenceList } from "./presence.js";
import { newMsgId, Outbox, pubFrame, type BatchPub, type Pub } from "./publish.js";
import { RpcCalls } from "./rpc.js";
import { acceptOk, acceptSeq, autoSub, newSub, subscribeFrame, type Sub } from "./subscriptions.js";
import { expOf, SubTokens } from "./sub-tokens.js";
import type {
  BatchItem,
  BatchItemResult,
  Frame,
  GatewayMessage,
  HistoryOptions,
  HistoryPage,
  MessageHandler,
  PresenceList,
  PublishResult,
  SubscribeInfo,
  SubscribeOptions,
  Subscription,
  WebSocketLike,
} from "./types.js";
import { deferred, isThenable } from "./util.js";
import { RAW, type MsgRaw } from "./wire.js";

/** Close code the client uses to drop a connection whose resubscribe failed (4000–4999 is application use). */
const CLOSE_RESUBSCRIBE_FAILED = 4000;

/**
 * A gateway connection that survives disconnects: it reconnects with full-jitter backoff, resumes every
 * subscription from the last seq it delivered (dropping duplicates), queues publishes while disconnected and
 * re-sends unanswered ones with the same msgId so the server stores them once.
 */
export class GatewayClient {
  /**
   * Counters for the curious: reconnects made, duplicate messages dropped, and deltas a delta subscription
   * could not apply (each made it subscribe again from its position).
   */
  readonly stats = { reconnects: 0, duplicatesDropped: 0, deltasLost: 0 };
  private readonly opts: ClientOptions;
  private readonly conn: Connection;
  private readonly events = new Emitter();
  private readonly subs = new Map<string, Sub>();
  private readonly outbox: Outbox;
  private readonly calls = new RpcCalls();
  private readonly subTokens: SubTokens;

  constructor(
    private readonly url: string,
    options: GatewayClientOptions = {},
  ) {
    this.opts = parseOptions(options);
    this.outbox = new Outbox(this.opts.queueLimit);
    this.subTokens = new SubTokens(this.opts.getSubscriptionToken);
    this.conn = new Connection(
      url,
      this.opts,
      {
        emit: (e) => this.events.emit(e),
        opened: (ws) => this.onOpen(ws),
        frame: (ws, f) => this.onFrame(ws, f),
        stopped: (error) => {
          this.outbox.rejectAll(error);
          this.calls.rejectAll(error);
          this.subTokens.cancelAll();
          for (const sub of this.subs.values()) sub.settle?.reject(error);
        },
      },
      this.stats,
    );
  }

  /** True while the socket is open. */
  get connected(): boolean {
    return this.conn.state === "open";
  }

  /** Starts connecting (and reconnecting); resolves on the first successful open. */
  connect(): Promise<void> {
    return this.conn.connect();
  }

  /** Listens to one event type; returns a function that removes the listener. */
  on<K extends GatewayEventType>(type: K, fn: (e: Extract<GatewayEvent, { type: K }>) => void): () => void {
    return this.events.on(type, fn);
  }

  /** Subscribes to a channel pattern; survives reconnects, resuming after the last delivered seq. */
  subscribe<T = unknown>(channel: string, handler: MessageHandler<T>, options: SubscribeOptions = {}): Subscription {
    if (this.conn.state === "closed") throw this.conn.stopped;
    const auto = this.subs.get(channel);
    if (auto && !auto.auto) throw new GatewayError("already_subscribed", `already subscribed to ${channel}`);
    if (options.durable !== undefined && options.from !== undefined) throw new GatewayError("bad_option", "from is not allowed with durable");
    if (options.durable !== undefined && options.presence) throw new GatewayError("bad_option", "presence is not allowed with durable");
    if (auto) auto.closed = true; // a server-side subscription: this one takes it over where it is
    const ready = deferred<SubscribeInfo>();
    ready.promise.catch(() => undefined); // rejection is also reported as an "error" event
    const sub = newSub(channel, handler as MessageHandler<unknown>, options, ready, (s) => this.unsubscribe(s), auto);
    this.subs.set(channel, sub);
    const ws = this.openSocket();
    if (ws) this.sendSub(sub, ws, () => undefined);
    return sub;
  }

  /**
   * Publishes `data`: any JSON value, or bytes (a Uint8Array) with `type`, their content type (default
   * application/octet-stream; PROTOCOL.md "Binary payloads"). Every publish carries a msgId (generated when not given), so a
   * publish re-sent after a lost reply is stored once. While disconnected it waits in a bounded queue.
   * `ttl` ("30s", "5m") makes the message expire from the stream, in a namespace whose stream allows it.
   */
  publish(channel: string, data: unknown, options: { msgId?: string; ttl?: string; type?: string } = {}): Promise<PublishResult> {
    if (this.conn.state === "closed") return Promise.reject(this.conn.stopped);
    return this.enqueue<PublishResult>((resolve, reject) => ({ ...options, channel, data, msgId: options.msgId ?? newMsgId(), resolve, reject }));
  }

  /**
   * Publishes many messages in one frame (PROTOCOL.md `pub` with `batch`): the server publishes them
   * pipelined and in item order, and answers one result per item — its seq, or its own error (say, no
   * right on that channel) while the others are stored. Every item carries a msgId, so a batch re-sent after
   * a lost reply is stored once. Queued while disconnected like `publish` (a batch counts as one). Rejects as
   * a whole only when the frame is refused (more items than the server's PUBLISH_BATCH_MAX_ITEMS, larger than
   * its MAX_PAYLOAD_BYTES) or the client closes.
   */
  publishBatch(items: readonly BatchItem[]): Promise<BatchItemResult[]> {
    if (this.conn.state === "closed") return Promise.reject(this.conn.stopped);
    if (items.length === 0) return Promise.resolve([]);
    return this.enqueue<BatchItemResult[]>((resolve, reject) => ({
      batch: items.map((i) => ({ ...i, msgId: i.msgId ?? newMsgId() })),
      resolve,
      reject,
    }));
  }

  /**
   * Replaces the connection's token before it expires (`refresh` frame); later reconnects use it too.
   * Resolves with the new expiry (unix seconds) or rejects with the server's `err` (e.g. forbidden).
   * Without an open connection, or if it closes before the server answers, resolves with `{}`: the token
   * is then presented by the next connection.
   */
  refreshToken(token: string): Promise<{ exp?: number }> {
    this.opts.token = token;
    const ws = this.openSocket();
    if (!ws) return Promise.resolve({});
    return new Promise((resolve, reject) => {
      this.conn.onceClosed(() => resolve({}));
      this.conn.request(ws, { op: "refresh", token }, (r) => (r.op === "ok" ? resolve(typeof r.exp === "number" ? { exp: r.exp } : {}) : reject(wireError(r))));
    });
  }

  /**
   * The members of a channel's presence (`presence` frame; needs the sub right on the channel). Rejects with
   * `not_connected` while there is no open connection, or with the server's `err`.
   */
  presence(channel: string): Promise<PresenceList> {
    const ws = this.openSocket();
    if (!ws) return Promise.reject(new GatewayError("not_connected", "no open connection", { temporary: true }));
    return new Promise((resolve, reject) => {
      this.conn.request(ws, { op: "presence", channel }, (r) => (r.op === "presence" ? resolve(presenceList(r)) : reject(wireError(r))));
    });
  }

  /**
   * Calls the application backend's `method` with `data` (PROTOCOL.md `rpc`; the token must grant the method)
   * and resolves with its answer's `data`. Rejects with the server's error: `rpc_error` when the backend
   * answered with one (its own code in `appCode`, `temporary` as it said), `forbidden`, `hook_unavailable`
   * (temporary), `rpc_unavailable`. Never queued nor re-sent, since the backend may have run it: rejects with
   * `not_connected` while disconnected and `connection_lost` when the connection drops before the answer,
   * both temporary (retry when a repeat is harmless).
   */
  rpc<T = unknown>(method: string, data?: unknown): Promise<T> {
    if (this.conn.state === "closed") return Promise.reject(this.conn.stopped);
    const ws = this.openSocket();
    if (!ws) return Promise.reject(new GatewayError("not_connected", "no open connection", { temporary: true }));
    return this.calls.call<T>(this.conn, ws, method, data);
  }

  /**
   * One page of a channel's stored messages, oldest first (newest first with `reverse`), read over HTTP from
   * the same gateway with the client's token (`getToken`'s, when set): needs the sub right on the channel,
   * not a connection. Follow `next` (as `fromSeq`, or `beforeSeq` with `reverse`) until a page has none.
   */
  async history(channel: string, options: HistoryOptions = {}): Promise<HistoryPage> {
    const token = this.opts.getToken ? await this.opts.getToken() : this.opts.token;
    return readHistory(this.url, channel, options, token);
  }

  /** Closes with 1000 and stops reconnecting; queued publishes and pending subscribes reject with `closed`. */
  close(): Promise<void> {
    return this.conn.close(new GatewayError("closed", "client closed"));
  }

  /** The socket, when it is open. */
  private openSocket(): WebSocketLike | undefined {
    return this.conn.state === "open" ? this.conn.ws : undefined;
  }

  private enqueue<R>(make: (resolve: (r: R) => void, reject: (e: Error) => void) => Pub | BatchPub): Promise<R> {
    const ws = this.openSocket();
    const { promise, pub } = this.outbox.add(make, ws !== undefined);
    if (pub && ws) this.sendPub(pub, ws);
    return promise;
  }

  private onOpen(ws: WebSocketLike): void {
    // A server-side subscription without an epoch (a broker that stores nothing) cannot resume: the server
    // subscribes the new connection again by itself.
    for (const sub of [...this.subs.values()]) if (sub.auto && !sub.epoch) this.subs.delete(sub.channel);
    const subs = [...this.subs.values()];
    let outstanding = subs.length;
    const done = () => {
      if (this.conn.ws !== ws) return;
      this.conn.resetBackoff();
      this.events.emit({ type: "resubscribed", subscriptions: subs.length });
    };
    for (const sub of subs) this.sendSub(sub, ws, () => --outstanding === 0 && done());
    if (subs.length === 0) done();
    for (const pub of this.outbox) this.sendPub(pub, ws);
  }

  /**
   * (Re)subscribes `sub`: with `getSubscriptionToken`, first asks it for a token (a server-side subscription
   * needs none). A token that cannot be had counts as a failed resubscribe: reconnect with backoff.
   */
  private sendSub(sub: Sub, ws: WebSocketLike, onDone: () => void): void {
    this.subTokens.cancel(sub);
    if (!this.subTokens.enabled || sub.auto) return this.sendSubFrame(sub, ws, onDone, undefined);
    this.subTokens.tokenFor(sub.channel).then(
      (token) => (this.conn.ws !== ws || sub.closed ? onDone() : this.sendSubFrame(sub, ws, onDone, token)),
      (error: GatewayError) => {
        this.events.emit({ type: "error", error, channel: sub.channel });
        if (this.conn.ws === ws) ws.close(CLOSE_RESUBSCRIBE_FAILED, "getSubscriptionToken failed");
        onDone();
      },
    );
  }

  private sendSubFrame(sub: Sub, ws: WebSocketLike, onDone: () => void, token: string | undefined): void {
    const { frame, expectedSeq } = subscribeFrame(sub);
    if (token) frame.token = token;
    // The server starts each channel of a new subscription with a full message.
    sub.deltas?.reset();
    sub.resuming = sub.opts.durable === undefined;
    this.conn.request(ws, frame, (reply) => {
      sub.resuming = false;
      if (sub.closed) return onDone();
      if (reply.op === "ok") {
        if (token) this.subTokens.schedule(sub, expOf(token), () => this.refreshSub(sub, ws));
        const { info, gap } = acceptOk(sub, reply, expectedSeq);
        if (gap) this.events.emit(gap);
        sub.settle?.resolve(info);
        sub.settle = undefined;
        return onDone();
      }
      const error = wireError(reply);
      this.events.emit({ type: "error", error, channel: sub.channel });
      // presence_full is temporary (members leave) but reconnecting would not make room: the subscription ends.
      if (error.temporary && error.code !== "presence_full") {
        ws.close(CLOSE_RESUBSCRIBE_FAILED, `resubscribe failed: ${error.code}`);
        return;
      }
      // A permanent refusal (bad_channel, forbidden…): the subscription ends.
      sub.closed = true;
      if (this.subs.get(sub.channel) === sub) this.subs.delete(sub.channel);
      sub.settle?.reject(error);
      onDone();
    });
  }

  /** A new token for `sub` before its token expires (`sub_refresh`); a failure is reported and the server ends it at exp. */
  private refreshSub(sub: Sub, ws: WebSocketLike): void {
    const report = (error: GatewayError) => this.events.emit({ type: "error", error, channel: sub.channel });
    this.subTokens.tokenFor(sub.channel).then((token) => {
      if (!token || sub.closed || this.conn.ws !== ws || this.conn.state !== "open") return;
      this.conn.request(ws, { op: "sub_refresh", channel: sub.channel, token }, (r) => {
        if (r.op !== "ok") return report(wireError(r));
        this.subTokens.schedule(sub, typeof r.exp === "number" ? r.exp : expOf(token), () => this.refreshSub(sub, ws));
      });
    }, report);
  }

  private unsubscribe(sub: Sub): void {
    if (sub.closed) return;
    sub.closed = true;
    this.subTokens.cancel(sub);
    if (this.subs.get(sub.channel) === sub) this.subs.delete(sub.channel);
    sub.settle?.reject(new GatewayError("unsubscribed", `unsubscribed from ${sub.channel}`));
    const ws = this.openSocket();
    if (ws) this.conn.request(ws, { op: "unsub", channel: sub.channel }, () => undefined);
  }

  private sendPub(pub: Pub | BatchPub, ws: WebSocketLike): void {
    this.conn.request(ws, pubFrame(pub, this.opts.wire.mustOffer), (reply) => this.outbox.settle(pub, reply));
  }

  /** Frames that are not replies: messages, server-side subscriptions, presence changes, a subscription the server ended. */
  private onFrame(ws: WebSocketLike, f: Frame): boolean {
    if (f.op === "msg") this.onMsg(ws, f);
    else if (f.op === "sub" && f.auto === true) this.onAutoSub(f);
    else if (f.op === "join" || f.op === "leave") this.onPresence(f);
    else if (f.op === "unsub") this.onServerUnsub(ws, f);
    else return false;
    return true;
  }

  /**
   * The server ended a subscription: an operator's unsubscribe (forget it, so a reconnect does not renew it),
   * or its subscription token expired unrefreshed (`subscription_expired`: subscribe again with a new one).
   */
  private onServerUnsub(ws: WebSocketLike, f: Frame): void {
    const channel = String(f.channel);
    const sub = this.subs.get(channel);
    if (!sub || sub.closed) return;
    if (f.code === "subscription_expired" && this.subTokens.enabled) return this.sendSub(sub, ws, () => undefined);
    sub.closed = true;
    this.subs.delete(channel);
    const error = new GatewayError("unsubscribed", `the server ended the subscription to ${channel}: ${String(f.reason ?? "")}`, { temporary: false });
    sub.settle?.reject(error);
    this.events.emit({ type: "error", error, channel });
  }

  /** The server subscribed this connection to a channel (`channels.auto`): track it like a subscribe(). */
  private onAutoSub(f: Frame): void {
    const channel = String(f.channel);
    // Known already: this connection's resubscribe takes the server's one over (or did).
    if (this.subs.has(channel)) return;
    const sub = autoSub(f, this.opts.onAutoMessage ?? (() => undefined), (s) => this.unsubscribe(s));
    this.subs.set(channel, sub);
    this.events.emit({ type: "autoSubscribed", channel, seq: sub.lastSeq });
  }

  private onMsg(ws: WebSocketLike, f: Frame): void {
    const sub = this.subs.get(String(f.sub));
    if (!sub || sub.closed || sub.resuming) return;
    const seq = Number(f.seq);
    // Before the seq is recorded: a message whose delta cannot be applied is read again after the resubscribe.
    if (sub.deltas && !this.applyDelta(sub, ws, f)) return;
    if (sub.opts.durable === undefined && !acceptSeq(sub, String(f.channel), seq)) {
      this.stats.duplicatesDropped++;
      return;
    }
    const msg = toMessage(f, seq, sub.channel, sub.opts.ack === true, (frame) => {
      // Acks on a closed socket are moot: the server released its unacked messages for redelivery.
      if (this.conn.ws !== ws || this.conn.state !== "open") return;
      try {
        ws.send(this.opts.wire.encode(frame));
      } catch {
        /* closing */
      }
    });
    let result: void | Promise<void>;
    try {
      result = sub.handler(msg);
    } catch (e) {
      return this.handlerFailed(sub, msg, e);
    }
    if (isThenable(result)) {
      result.then(
        () => sub.opts.autoAck && msg.ack(),
        (e) => this.handlerFailed(sub, msg, e),
      );
    } else if (sub.opts.autoAck) {
      msg.ack();
    }
  }

  /**
   * A delta subscription's message made whole (`f.data`); false when it cannot be (no base for the delta, or
   * a delta that does not apply): nothing of it is shown, and the subscription is made again from its
   * position (unsub, then sub from lastSeq + 1), the server starting each channel with a full message.
   */
  private applyDelta(sub: Sub, ws: WebSocketLike, f: Frame): boolean {
    const raw = (f as Record<symbol, MsgRaw | undefined>)[RAW];
    const got = raw === undefined ? undefined : sub.deltas!.receive(f, raw);
    if (got?.ok) {
      f.data = got.data;
      return true;
    }
    this.stats.deltasLost++;
    sub.resuming = true;
    this.conn.request(ws, { op: "unsub", channel: sub.channel }, () => undefined);
    this.sendSub(sub, ws, () => undefined);
    return false;
  }

  private onPresence(f: Frame): void {
    const sub = this.subs.get(String(f.channel));
    const fn = sub && !sub.closed ? sub.opts.onPresence : undefined;
    if (!fn) return;
    const e = presenceEvent(f);
    try {
      fn(e);
    } catch (err) {
      this.events.emit({
        type: "error",
        channel: e.channel,
        error: new GatewayError("handler_error", `onPresence for ${e.channel} threw: ${messageOf(err)}`, { cause: err }),
      });
    }
  }

  private handlerFailed(sub: Sub, msg: GatewayMessage, e: unknown): void {
    this.events.emit({
      type: "error",
      channel: sub.channel,
      error: new GatewayError("handler_error", `handler for ${sub.channel} threw on seq ${msg.seq}: ${messageOf(e)}`, { cause: e }),
    });
    if (sub.opts.autoAck) msg.nak();
  }
}
