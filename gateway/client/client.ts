/**
 * fanout-gateway client SDK: one dependency-free ES module for browsers (native WebSocket) and Node (pass a
 * WebSocket implementation such as the `ws` package). Reconnects with full-jitter backoff, resumes every
 * subscription from the last seq it delivered (dropping duplicates), queues publishes while disconnected and
 * re-sends unanswered ones with the same msgId so the server stores them once. Wire protocol:
 * gateway/PROTOCOL.md; usage: gateway/client/README.md.
 */

/** The part of the WebSocket API the client uses: the browser's WebSocket and `ws` both fit. */
export interface WebSocketLike {
  readonly readyState: number;
  // `any` keeps both DOM's (this: WebSocket, ev: CloseEvent) handlers and ws' handler types assignable.
  /* eslint-disable @typescript-eslint/no-explicit-any */
  onopen: ((ev: any) => void) | null;
  onclose: ((ev: any) => void) | null;
  onmessage: ((ev: any) => void) | null;
  onerror: ((ev: any) => void) | null;
  /* eslint-enable @typescript-eslint/no-explicit-any */
  send(data: string): void;
  close(code?: number, reason?: string): void;
}
export type WebSocketConstructor = new (url: string, protocols?: string | string[]) => WebSocketLike;

export type ClientErrorCode =
  | "bad_option"
  | "queue_full"
  | "closed"
  | "token_expired"
  | "already_subscribed"
  | "unsubscribed"
  | "handler_error"
  | "no_websocket"
  | "token_error"
  | "not_connected";

/** Client-side failures (`ClientErrorCode`) and server `err` replies (the wire codes of PROTOCOL.md). */
export class GatewayError extends Error {
  override readonly name = "GatewayError";
  /** Whether retrying can help: the server says so on each `err` frame (`temporary`). */
  readonly temporary: boolean;
  constructor(
    readonly code: ClientErrorCode | (string & {}),
    message: string,
    options?: { cause?: unknown; temporary?: boolean },
  ) {
    super(message, options);
    this.temporary = options?.temporary ?? !PERMANENT.has(code);
  }
}

/**
 * Where a subscription starts (PROTOCOL.md `sub`): live when omitted. `"last_per_subject"`: the newest message
 * of every matching channel, then live (current prices, device states, document heads).
 */
export type StartPosition = { seq: number } | { time: string | Date } | { last: number } | "all" | "last_per_subject";

export interface GatewayClientOptions {
  /** Sent as a `bearer.<token>` subprotocol (or as the `token` query parameter with `tokenVia: "query"`). */
  token?: string;
  /** Called before every connect for a fresh token; also makes the client reconnect after a 4001 close. */
  getToken?: () => string | Promise<string>;
  /**
   * "protocol" (default): `Sec-WebSocket-Protocol: fanout.v1, bearer.<token>`, which proxies and access logs do
   * not keep; "query": `?token=`, in the URL, where they do (only for servers behind something that drops the
   * subprotocol header).
   */
  tokenVia?: "query" | "protocol";
  /** WebSocket implementation; defaults to `globalThis.WebSocket`. */
  WebSocket?: WebSocketConstructor;
  /** Reconnect delay bounds: delay = random(0, min(maxDelayMs, minDelayMs·2^attempt)). */
  minDelayMs?: number;
  maxDelayMs?: number;
  /** Most publishes held while disconnected; more reject with `queue_full`. */
  queueLimit?: number;
  /** A connection attempt that has not opened after this long is abandoned and retried. */
  connectTimeoutMs?: number;
  /**
   * Handler of server-side subscriptions (the token's `channels.auto`, or a connect hook's): messages of the
   * channels the server subscribed this connection to. They resume after reconnects like `subscribe()`'s;
   * without this option their messages are dropped.
   */
  onAutoMessage?: MessageHandler;
}

export const DEFAULT_OPTIONS = { minDelayMs: 250, maxDelayMs: 15_000, queueLimit: 1_000, connectTimeoutMs: 10_000, tokenVia: "protocol" } as const;

export interface SubscribeOptions {
  /** Start position of the first subscribe; later resubscribes resume from the last delivered seq + 1. */
  from?: StartPosition;
  /** Durable consumer name (at-least-once; `from` is not allowed with it). */
  durable?: string;
  /** Explicit acks for a durable: messages get working ack()/nak()/term(). */
  ack?: boolean;
  /** Ack after the handler returns (awaited if it returns a promise), nak if it throws. Default: `ack`. */
  autoAck?: boolean;
  maxInflight?: number;
  /**
   * Presence of a concrete channel (not with `durable`): `true` enters its members and receives its joins and
   * leaves, `"member"` enters without receiving them, `"watch"` receives them without entering.
   */
  presence?: boolean | "member" | "watch";
  /** With `presence` true or "member": shown to the other members with this one (any JSON, at most 1 KiB). */
  info?: unknown;
  /** With `presence` true or "watch": called for every join and leave of the channel (its own join too). */
  onPresence?: (e: PresenceEvent) => void;
}

/** A presence member (PROTOCOL.md `presence`): a connection, its user (null without auth) and its info. */
export type PresenceMember = { client: string; user: string | null; info?: unknown; joinedAt: number };
/** A join or leave of a channel the subscription is present in. */
export type PresenceEvent = { type: "join" | "leave"; channel: string; client: string; user: string | null; info?: unknown };
/** The members of a channel; `truncated` when there were more than the server's bound. */
export type PresenceList = { members: PresenceMember[]; truncated: boolean };

/** A delivered message. ack/nak/term do something only on `ack:true` subscriptions. */
export interface GatewayMessage<T = unknown> {
  readonly channel: string;
  /** The pattern of the subscription it is for. */
  readonly sub: string;
  readonly seq: number;
  /** Broker timestamp, ms since the epoch (µs precision). */
  readonly ts: number;
  readonly data: T;
  readonly enc?: "text" | "base64";
  readonly durable?: string;
  readonly redelivered?: boolean;
  readonly deliveries?: number;
  ack(): void;
  nak(delayMs?: number): void;
  term(): void;
  /**
   * Work in progress: the server restarts the message's ack_wait, so it is not redelivered while the handler
   * still works on it. Call it more often than the gateway's DURABLE_ACK_WAIT; no-op once settled.
   */
  inProgress(): void;
}

export type MessageHandler<T = unknown> = (msg: GatewayMessage<T>) => void | Promise<void>;

/** The server's `ok` to a subscribe: stream bounds, and `truncated` when the start was already removed. */
export type SubscribeInfo = { firstSeq?: number; lastSeq?: number; truncated?: boolean; epoch?: string; epochChanged?: boolean; client?: string };

export interface Subscription {
  readonly channel: string;
  /** Last seq delivered to the handler (0: none yet). */
  readonly lastSeq: number;
  /** Settles with the first `ok` (or rejects with the `err`). */
  readonly ready: Promise<SubscribeInfo>;
  /** With `presence`: this connection's client id in the channel's presence (a new one after a reconnect). */
  readonly client?: string;
  unsubscribe(): void;
}

export type PublishResult = { seq: number; duplicate: boolean };
/** One item of `publishBatch`: as `publish`'s arguments. */
export type BatchItem = { channel: string; data: unknown; msgId?: string };
/** One item's outcome in a batch, in the item's place: stored, or the server's error for that item alone. */
export type BatchItemResult = PublishResult | { error: GatewayError };

/** Lifecycle events, one discriminated union. */
export type GatewayEvent =
  | { type: "connecting"; attempt: number }
  | { type: "connected" }
  | { type: "disconnected"; code: number; reason: string; willReconnect: boolean; reconnectInMs?: number }
  | { type: "resubscribed"; subscriptions: number }
  /** The server subscribed this connection to `channel` (a server-side subscription); its messages go to `onAutoMessage`. */
  | { type: "autoSubscribed"; channel: string; seq: number }
  /** Messages the subscription asked for are gone: retention removed them, or (`epochChanged`) the stream was recreated. */
  | { type: "gap"; channel: string; expectedSeq: number; firstSeq: number; epochChanged?: boolean }
  | { type: "tokenExpired" }
  | { type: "error"; error: GatewayError; channel?: string };
export type GatewayEventType = GatewayEvent["type"];

/** Reconnect delay for attempt n (0-based): uniform in [0, min(maxMs, minMs·2^n)] ("full jitter"). */
export function backoffDelay(attempt: number, minMs: number, maxMs: number, random: () => number = Math.random): number {
  const cap = Math.min(maxMs, minMs * 2 ** Math.min(Math.max(attempt, 0), 52));
  return Math.min(cap, Math.floor(random() * (cap + 1)));
}

/** Server refusals that retrying cannot fix: the subscription ends. Any other `err` (broker_unavailable,
 * broker_error, shutting_down, internal, rate_limited, codes added later) reconnects with backoff. */
/** Codes that retrying cannot fix, for servers whose `err` frames do not say (`temporary`) themselves. */
const PERMANENT = new Set([
  "bad_json",
  "unknown_op",
  "bad_request",
  "bad_channel",
  "too_many_subscriptions",
  "already_subscribed",
  "unsupported_by_broker",
  "forbidden",
  "durable_conflict",
  "too_many_durables",
]);
/** Close code the client uses to drop a connection whose resubscribe failed (4000–4999 is application use). */
const CLOSE_RESUBSCRIBE_FAILED = 4000;
/** Channels whose last seq a subscription remembers for its duplicate check. */
const MAX_TRACKED_CHANNELS = 10_000;

type Frame = Record<string, unknown> & { op: string; id?: unknown };
type Sub = Subscription & {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- handlers of any message type live in one map
  handler: MessageHandler<any>;
  opts: SubscribeOptions;
  lastSeq: number;
  /** Epoch of the stream `lastSeq` belongs to (from the server's ok). */
  epoch?: string;
  /** Last seq per channel (bounded), and the seq at or below which a forgotten channel's messages are old. */
  lastByChannel: Map<string, number>;
  floor: number;
  closed: boolean;
  /** A server-side subscription (announced by the server, not asked for by `subscribe()`). */
  auto?: boolean;
  /** A resubscribe is waiting for its ok: frames of the server-side subscription it takes over are dropped. */
  resuming?: boolean;
  client?: string;
  settle?: { resolve: (i: SubscribeInfo) => void; reject: (e: GatewayError) => void };
};
type Pub = { channel: string; data: unknown; msgId: string; resolve: (r: PublishResult) => void; reject: (e: Error) => void };
type BatchPub = { batch: Required<BatchItem>[]; resolve: (r: BatchItemResult[]) => void; reject: (e: Error) => void };

export class GatewayClient {
  /** Counters for the curious: reconnects made and duplicate messages dropped. */
  readonly stats = { reconnects: 0, duplicatesDropped: 0 };
  private readonly opts: Required<Omit<GatewayClientOptions, "token" | "getToken" | "onAutoMessage">> &
    Pick<GatewayClientOptions, "token" | "getToken" | "onAutoMessage">;
  private readonly url: string;
  private state: "idle" | "connecting" | "open" | "waiting" | "closed" = "idle";
  private ws: WebSocketLike | undefined;
  private attempt = 0;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private connectTimer: ReturnType<typeof setTimeout> | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, (f: Frame) => void>();
  private readonly subs = new Map<string, Sub>();
  /** Publishes not answered yet, in call order (Set keeps insertion order). */
  private readonly outbox = new Set<Pub | BatchPub>();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each event type has its own listener type
  private readonly listeners = new Map<GatewayEventType, Set<(e: any) => void>>();
  private firstOpen: { promise: Promise<void>; resolve: () => void; reject: (e: Error) => void };
  private closedWaiters: (() => void)[] = [];
  /** Why the client stopped (close(), or a 4001 without getToken); later calls reject with it. */
  private stopped: GatewayError | undefined;

  constructor(url: string, options: GatewayClientOptions = {}) {
    this.url = url.replace(/^http(s?):/, "ws$1:");
    const WS = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (!WS) throw new GatewayError("no_websocket", "no WebSocket implementation: pass options.WebSocket (e.g. the ws package) in Node < 22");
    this.opts = { ...DEFAULT_OPTIONS, ...stripUndefined(options), WebSocket: WS };
    const { minDelayMs: min, maxDelayMs: max, queueLimit, connectTimeoutMs } = this.opts;
    if (!(Number.isFinite(min) && min >= 0)) throw new GatewayError("bad_option", `minDelayMs must be a number >= 0, got ${min}`);
    if (!(Number.isFinite(max) && max >= min)) throw new GatewayError("bad_option", `maxDelayMs must be a number >= minDelayMs (${min}), got ${max}`);
    if (!(Number.isInteger(queueLimit) && queueLimit >= 0)) throw new GatewayError("bad_option", `queueLimit must be an integer >= 0, got ${queueLimit}`);
    if (!(Number.isFinite(connectTimeoutMs) && connectTimeoutMs > 0))
      throw new GatewayError("bad_option", `connectTimeoutMs must be > 0, got ${connectTimeoutMs}`);
    if (this.opts.tokenVia !== "query" && this.opts.tokenVia !== "protocol") throw new GatewayError("bad_option", `tokenVia must be "query" or "protocol"`);
    this.firstOpen = deferred<void>();
  }

  /** True while the socket is open. */
  get connected(): boolean {
    return this.state === "open";
  }

  /** Starts connecting (and reconnecting); resolves on the first successful open. */
  connect(): Promise<void> {
    if (this.state === "closed") return Promise.reject(this.stopped);
    if (this.state === "idle") void this.open();
    return this.firstOpen.promise;
  }

  /** Listens to one event type; returns a function that removes the listener. */
  on<K extends GatewayEventType>(type: K, fn: (e: Extract<GatewayEvent, { type: K }>) => void): () => void {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, (set = new Set()));
    set.add(fn);
    return () => set.delete(fn);
  }

  /** Subscribes to a channel pattern; survives reconnects, resuming after the last delivered seq. */
  subscribe<T = unknown>(channel: string, handler: MessageHandler<T>, options: SubscribeOptions = {}): Subscription {
    if (this.state === "closed") throw this.stopped;
    const auto = this.subs.get(channel);
    if (auto && !auto.auto) throw new GatewayError("already_subscribed", `already subscribed to ${channel}`);
    if (options.durable !== undefined && options.from !== undefined) throw new GatewayError("bad_option", "from is not allowed with durable");
    if (options.durable !== undefined && options.presence) throw new GatewayError("bad_option", "presence is not allowed with durable");
    if (auto) auto.closed = true; // a server-side subscription: this one takes it over where it is
    const ready = deferred<SubscribeInfo>();
    ready.promise.catch(() => undefined); // rejection is also reported as an "error" event
    const sub: Sub = {
      channel,
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see Sub.handler
      handler: handler as MessageHandler<any>,
      opts: { ...options, autoAck: options.autoAck ?? options.ack === true },
      lastSeq: auto && options.durable === undefined ? auto.lastSeq : 0,
      epoch: auto?.epoch,
      lastByChannel: auto && options.durable === undefined ? auto.lastByChannel : new Map(),
      floor: auto?.floor ?? 0,
      closed: false,
      ready: ready.promise,
      settle: { resolve: ready.resolve, reject: ready.reject },
      unsubscribe: () => this.unsubscribe(sub),
    };
    this.subs.set(channel, sub);
    if (this.state === "open" && this.ws) this.sendSub(sub, this.ws, () => undefined);
    return sub;
  }

  /**
   * Publishes `data` (any JSON value). Every publish carries a msgId (generated when not given), so a
   * publish re-sent after a lost reply is stored once. While disconnected it waits in a bounded queue.
   */
  publish(channel: string, data: unknown, options: { msgId?: string } = {}): Promise<PublishResult> {
    if (this.state === "closed") return Promise.reject(this.stopped);
    if (this.state !== "open" && this.outbox.size >= this.opts.queueLimit) {
      return Promise.reject(new GatewayError("queue_full", `publish queue is full (${this.opts.queueLimit} waiting while disconnected)`));
    }
    return new Promise((resolve, reject) => {
      const pub: Pub = { channel, data, msgId: options.msgId ?? newMsgId(), resolve, reject };
      this.outbox.add(pub);
      if (this.state === "open" && this.ws) this.sendPub(pub, this.ws);
    });
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
    if (this.state === "closed") return Promise.reject(this.stopped);
    if (items.length === 0) return Promise.resolve([]);
    if (this.state !== "open" && this.outbox.size >= this.opts.queueLimit) {
      return Promise.reject(new GatewayError("queue_full", `publish queue is full (${this.opts.queueLimit} waiting while disconnected)`));
    }
    return new Promise((resolve, reject) => {
      const pub: BatchPub = { batch: items.map((i) => ({ channel: i.channel, data: i.data, msgId: i.msgId ?? newMsgId() })), resolve, reject };
      this.outbox.add(pub);
      if (this.state === "open" && this.ws) this.sendPub(pub, this.ws);
    });
  }

  /**
   * Replaces the connection's token before it expires (`refresh` frame); later reconnects use it too.
   * Resolves with the new expiry (unix seconds) or rejects with the server's `err` (e.g. forbidden).
   * Without an open connection, or if it closes before the server answers, resolves with `{}`: the token
   * is then presented by the next connection.
   */
  refreshToken(token: string): Promise<{ exp?: number }> {
    this.opts.token = token;
    const ws = this.ws;
    if (this.state !== "open" || !ws) return Promise.resolve({});
    return new Promise((resolve, reject) => {
      this.closedWaiters.push(() => resolve({}));
      this.request(ws, { op: "refresh", token }, (r) => (r.op === "ok" ? resolve(typeof r.exp === "number" ? { exp: r.exp } : {}) : reject(wireError(r))));
    });
  }

  /**
   * The members of a channel's presence (`presence` frame; needs the sub right on the channel). Rejects with
   * `not_connected` while there is no open connection, or with the server's `err`.
   */
  presence(channel: string): Promise<PresenceList> {
    const ws = this.ws;
    if (this.state !== "open" || !ws) return Promise.reject(new GatewayError("not_connected", "no open connection", { temporary: true }));
    return new Promise((resolve, reject) => {
      this.request(ws, { op: "presence", channel }, (r) =>
        r.op === "presence" ? resolve({ members: r.members as PresenceMember[], truncated: r.truncated === true }) : reject(wireError(r)),
      );
    });
  }

  /** Closes with 1000 and stops reconnecting; queued publishes and pending subscribes reject with `closed`. */
  close(): Promise<void> {
    if (this.state === "closed") return Promise.resolve();
    this.shutdown(new GatewayError("closed", "client closed"));
    const ws = this.ws;
    if (!ws) return Promise.resolve();
    const done = new Promise<void>((r) => this.closedWaiters.push(r));
    ws.close(1000, "client closed");
    return done;
  }

  private async open(): Promise<void> {
    this.state = "connecting";
    this.emit({ type: "connecting", attempt: this.attempt });
    let token = this.opts.token;
    if (this.opts.getToken) {
      try {
        token = await this.opts.getToken();
      } catch (e) {
        this.emit({ type: "error", error: new GatewayError("token_error", `getToken failed: ${(e as Error).message}`, { cause: e }) });
        this.scheduleReconnect();
        return;
      }
      if (this.state !== "connecting") return;
    }
    let url = this.url;
    let protocols: string[] | undefined;
    if (token && this.opts.tokenVia === "query") url += `${url.includes("?") ? "&" : "?"}token=${encodeURIComponent(token)}`;
    else if (token) protocols = ["fanout.v1", `bearer.${token}`];
    let ws: WebSocketLike;
    try {
      ws = protocols ? new this.opts.WebSocket(url, protocols) : new this.opts.WebSocket(url);
    } catch (e) {
      this.emit({ type: "error", error: new GatewayError("no_websocket", `cannot open ${url}: ${(e as Error).message}`, { cause: e }) });
      this.scheduleReconnect();
      return;
    }
    this.ws = ws;
    this.connectTimer = setTimeout(() => {
      if (this.ws === ws && this.state === "connecting") ws.close();
    }, this.opts.connectTimeoutMs);
    ws.onopen = () => this.ws === ws && this.onOpen(ws);
    ws.onmessage = (ev: { data: unknown }) => this.ws === ws && this.onFrame(ws, typeof ev.data === "string" ? ev.data : String(ev.data));
    ws.onclose = (ev: { code?: number; reason?: string }) => this.onClose(ws, ev.code ?? 1006, ev.reason ?? "");
    ws.onerror = () => undefined; // a close event follows with the code
  }

  private onOpen(ws: WebSocketLike): void {
    clearTimeout(this.connectTimer);
    if (this.state === "closed") return;
    this.state = "open";
    this.emit({ type: "connected" });
    this.firstOpen.resolve();
    // A server-side subscription without an epoch (a broker that stores nothing) cannot resume: the server
    // subscribes the new connection again by itself.
    for (const sub of [...this.subs.values()]) if (sub.auto && !sub.epoch) this.subs.delete(sub.channel);
    const subs = [...this.subs.values()];
    let outstanding = subs.length;
    const done = () => {
      if (this.ws !== ws) return;
      this.attempt = 0;
      this.emit({ type: "resubscribed", subscriptions: subs.length });
    };
    for (const sub of subs) this.sendSub(sub, ws, () => --outstanding === 0 && done());
    if (subs.length === 0) done();
    for (const pub of this.outbox) this.sendPub(pub, ws);
  }

  private onClose(ws: WebSocketLike, code: number, reason: string): void {
    if (this.ws !== ws) return;
    clearTimeout(this.connectTimer);
    this.ws = undefined;
    this.pending.clear();
    for (const w of this.closedWaiters.splice(0)) w();
    if (this.state === "closed") {
      this.emit({ type: "disconnected", code, reason, willReconnect: false });
      return;
    }
    // 4403: the server disconnected this user and asks it not to come back (4012 asks for a reconnect).
    if (code === 4403) {
      this.emit({ type: "disconnected", code, reason, willReconnect: false });
      this.shutdown(new GatewayError("disconnected", `disconnected by the server (close 4403): ${reason}`));
      return;
    }
    if (code === 4001) {
      this.emit({ type: "tokenExpired" });
      if (!this.opts.getToken) {
        this.emit({ type: "disconnected", code, reason, willReconnect: false });
        this.shutdown(new GatewayError("token_expired", "the token expired (close 4001) and no getToken option is set"));
        return;
      }
    }
    const delay = this.scheduleReconnect();
    this.emit({ type: "disconnected", code, reason, willReconnect: true, reconnectInMs: delay });
  }

  private scheduleReconnect(): number {
    const delay = backoffDelay(this.attempt, this.opts.minDelayMs, this.opts.maxDelayMs);
    this.attempt++;
    this.state = "waiting";
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (this.state !== "waiting") return;
      this.stats.reconnects++;
      void this.open();
    }, delay);
    return delay;
  }

  private shutdown(error: GatewayError): void {
    this.state = "closed";
    this.stopped = error;
    clearTimeout(this.reconnectTimer);
    clearTimeout(this.connectTimer);
    this.firstOpen.promise.catch(() => undefined);
    this.firstOpen.reject(error);
    for (const pub of this.outbox) pub.reject(error);
    this.outbox.clear();
    for (const sub of this.subs.values()) sub.settle?.reject(error);
  }

  private request(ws: WebSocketLike, frame: Record<string, unknown>, onReply: (f: Frame) => void): void {
    const id = this.nextId++;
    this.pending.set(id, onReply);
    try {
      ws.send(JSON.stringify({ ...frame, id }));
    } catch {
      this.pending.delete(id); // the socket is closing; its close event re-sends what needs it
    }
  }

  private sendSub(sub: Sub, ws: WebSocketLike, onDone: () => void): void {
    const frame: Record<string, unknown> = { op: "sub", channel: sub.channel };
    let expectedSeq: number | undefined;
    if (sub.opts.durable !== undefined) {
      frame.durable = sub.opts.durable;
      if (sub.opts.ack) frame.ack = true;
      if (sub.opts.maxInflight !== undefined) frame.maxInflight = sub.opts.maxInflight;
    } else {
      if (sub.opts.presence) frame.presence = sub.opts.presence;
      if (sub.opts.presence && sub.opts.presence !== "watch" && sub.opts.info !== undefined) frame.info = sub.opts.info;
      // The epoch names the stream the seq belongs to: a recreated stream is reported, not misread.
      const from = sub.lastSeq > 0 || sub.auto ? { seq: sub.lastSeq + 1, ...(sub.epoch ? { epoch: sub.epoch } : {}) } : sub.opts.from;
      if (from !== undefined) frame.from = typeof from === "object" && "time" in from ? { time: new Date(from.time).toISOString() } : from;
      if (typeof from === "object" && "seq" in from) expectedSeq = from.seq;
    }
    sub.resuming = sub.opts.durable === undefined;
    this.request(ws, frame, (reply) => {
      sub.resuming = false;
      if (sub.closed) return onDone();
      if (reply.op === "ok") {
        if (reply.epochChanged === true) {
          // The new stream's seqs start over.
          sub.lastSeq = 0;
          sub.floor = 0;
          sub.lastByChannel.clear();
        }
        if (typeof reply.epoch === "string") sub.epoch = reply.epoch;
        if (reply.truncated === true && expectedSeq !== undefined) {
          this.emit({
            type: "gap",
            channel: sub.channel,
            expectedSeq,
            firstSeq: Number(reply.firstSeq),
            ...(reply.epochChanged === true ? { epochChanged: true } : {}),
          });
        }
        const info: SubscribeInfo = {};
        if (typeof reply.epoch === "string") info.epoch = reply.epoch;
        if (reply.epochChanged === true) info.epochChanged = true;
        if (typeof reply.firstSeq === "number") info.firstSeq = reply.firstSeq;
        if (typeof reply.lastSeq === "number") info.lastSeq = reply.lastSeq;
        if (reply.truncated === true) info.truncated = true;
        if (typeof reply.client === "string") info.client = sub.client = reply.client;
        sub.settle?.resolve(info);
        sub.settle = undefined;
        return onDone();
      }
      const error = wireError(reply);
      this.emit({ type: "error", error, channel: sub.channel });
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

  private unsubscribe(sub: Sub): void {
    if (sub.closed) return;
    sub.closed = true;
    if (this.subs.get(sub.channel) === sub) this.subs.delete(sub.channel);
    sub.settle?.reject(new GatewayError("unsubscribed", `unsubscribed from ${sub.channel}`));
    if (this.state === "open" && this.ws) this.request(this.ws, { op: "unsub", channel: sub.channel }, () => undefined);
  }

  private sendPub(pub: Pub | BatchPub, ws: WebSocketLike): void {
    if ("batch" in pub)
      return this.request(ws, { op: "pub", batch: pub.batch }, (reply) => {
        this.outbox.delete(pub);
        if (reply.op !== "ok" || !Array.isArray(reply.results)) return pub.reject(wireError(reply));
        pub.resolve(
          (reply.results as Frame[]).map((r) =>
            typeof r.error === "string" ? { error: wireError({ ...r, code: r.error }) } : { seq: Number(r.seq), duplicate: r.duplicate === true },
          ),
        );
      });
    this.request(ws, { op: "pub", channel: pub.channel, data: pub.data, msgId: pub.msgId }, (reply) => {
      this.outbox.delete(pub);
      if (reply.op === "ok") pub.resolve({ seq: Number(reply.seq), duplicate: reply.duplicate === true });
      else pub.reject(wireError(reply));
    });
  }

  private onFrame(ws: WebSocketLike, text: string): void {
    let f: Frame;
    try {
      f = JSON.parse(text) as Frame;
    } catch {
      return this.emit({ type: "error", error: new GatewayError("bad_json", "server sent a frame that is not JSON") });
    }
    if (f.op === "msg") return this.onMsg(ws, f);
    if (f.op === "sub" && f.auto === true) return this.onAutoSub(f);
    if (f.op === "join" || f.op === "leave") return this.onPresence(f);
    if (typeof f.id === "number" && this.pending.has(f.id)) {
      const reply = this.pending.get(f.id)!;
      this.pending.delete(f.id);
      return reply(f);
    }
    if (f.op === "err") this.emit({ type: "error", error: wireError(f) });
  }

  /** The server subscribed this connection to a channel (`channels.auto`): track it like a subscribe(). */
  private onAutoSub(f: Frame): void {
    const channel = String(f.channel);
    // Known already: this connection's resubscribe takes the server's one over (or did).
    if (this.subs.has(channel)) return;
    const seq = typeof f.seq === "number" ? f.seq : 0;
    const sub: Sub = {
      channel,
      handler: this.opts.onAutoMessage ?? (() => undefined),
      opts: {},
      lastSeq: seq,
      lastByChannel: new Map(),
      floor: seq,
      closed: false,
      auto: true,
      ready: Promise.resolve({ lastSeq: seq, ...(typeof f.epoch === "string" ? { epoch: f.epoch } : {}) }),
      unsubscribe: () => this.unsubscribe(sub),
    };
    if (typeof f.epoch === "string") sub.epoch = f.epoch;
    this.subs.set(channel, sub);
    this.emit({ type: "autoSubscribed", channel, seq });
  }

  private onMsg(ws: WebSocketLike, f: Frame): void {
    const sub = this.subs.get(String(f.sub));
    if (!sub || sub.closed || sub.resuming) return;
    const seq = Number(f.seq);
    if (sub.opts.durable === undefined) {
      // Order is per channel: on a wildcard subscription a message the server repaired late can follow newer
      // messages of other channels, so duplicates are told by the channel's own last seq.
      const channel = String(f.channel);
      const last = sub.lastByChannel.get(channel) ?? sub.floor;
      if (seq <= last) {
        this.stats.duplicatesDropped++;
        return;
      }
      sub.lastByChannel.delete(channel);
      sub.lastByChannel.set(channel, seq);
      if (sub.lastByChannel.size > MAX_TRACKED_CHANNELS) {
        const [oldest, s] = sub.lastByChannel.entries().next().value as [string, number];
        sub.lastByChannel.delete(oldest);
        if (s > sub.floor) sub.floor = s;
      }
      if (seq > sub.lastSeq) sub.lastSeq = seq;
    }
    const msg = this.message(ws, sub, f, seq);
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

  private onPresence(f: Frame): void {
    const sub = this.subs.get(String(f.channel));
    const fn = sub && !sub.closed ? sub.opts.onPresence : undefined;
    if (!fn) return;
    const e: PresenceEvent = {
      type: f.op as "join" | "leave",
      channel: String(f.channel),
      client: String(f.client),
      user: typeof f.user === "string" ? f.user : null,
    };
    if (f.info !== undefined) e.info = f.info;
    try {
      fn(e);
    } catch (err) {
      this.emit({
        type: "error",
        channel: e.channel,
        error: new GatewayError("handler_error", `onPresence for ${e.channel} threw: ${(err as Error)?.message ?? String(err)}`, { cause: err }),
      });
    }
  }

  private handlerFailed(sub: Sub, msg: GatewayMessage, e: unknown): void {
    this.emit({
      type: "error",
      channel: sub.channel,
      error: new GatewayError("handler_error", `handler for ${sub.channel} threw on seq ${msg.seq}: ${(e as Error)?.message ?? String(e)}`, { cause: e }),
    });
    if (sub.opts.autoAck) msg.nak();
  }

  private message(ws: WebSocketLike, sub: Sub, f: Frame, seq: number): GatewayMessage {
    let settled = !sub.opts.ack;
    const reply = (op: "ack" | "nak" | "term", extra?: Record<string, unknown>) => {
      if (settled) return;
      settled = true;
      // Acks on a closed socket are moot: the server released its unacked messages for redelivery.
      if (this.ws === ws && this.state === "open") {
        try {
          ws.send(JSON.stringify({ op, seq, sub: sub.channel, ...extra }));
        } catch {
          /* closing */
        }
      }
    };
    return {
      channel: String(f.channel),
      sub: String(f.sub),
      seq,
      ts: Number(f.ts),
      data: f.data,
      enc: f.enc === "text" || f.enc === "base64" ? f.enc : undefined,
      durable: typeof f.durable === "string" ? f.durable : undefined,
      redelivered: f.redelivered === true ? true : undefined,
      deliveries: typeof f.deliveries === "number" ? f.deliveries : undefined,
      ack: () => reply("ack"),
      nak: (delayMs?: number) => reply("nak", delayMs === undefined ? undefined : { delay: delayMs }),
      term: () => reply("term"),
      inProgress: () => {
        if (settled || this.ws !== ws || this.state !== "open") return;
        try {
          ws.send(JSON.stringify({ op: "inprogress", seq, sub: sub.channel }));
        } catch {
          /* closing */
        }
      },
    };
  }

  private emit(e: GatewayEvent): void {
    for (const fn of this.listeners.get(e.type) ?? []) {
      try {
        fn(e);
      } catch (err) {
        queueMicrotask(() => {
          throw err; // a listener's bug should surface, not break the client's state machine
        });
      }
    }
  }
}

/** The JSON error a refused event stream answers with (undefined when it streams, or cannot be asked). */
async function refusal(url: string): Promise<GatewayError | undefined> {
  if (typeof fetch !== "function") return undefined;
  const ac = new AbortController();
  try {
    const r = await fetch(url, { signal: ac.signal });
    if (r.status === 200) return undefined;
    const body = (await r.json()) as { error?: unknown; message?: unknown; temporary?: unknown };
    return wireError({ op: "err", code: body.error ?? `http_${r.status}`, message: body.message, temporary: body.temporary });
  } catch {
    return undefined;
  } finally {
    ac.abort();
  }
}

function wireError(f: Frame): GatewayError {
  const code = typeof f.code === "string" ? f.code : "internal";
  return new GatewayError(
    code,
    typeof f.message === "string" ? f.message : JSON.stringify(f),
    typeof f.temporary === "boolean" ? { temporary: f.temporary } : undefined,
  );
}

function newMsgId(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (c?.randomUUID) return c.randomUUID(); // absent on plain-http pages that are not localhost
  let s = "";
  for (let i = 0; i < 4; i++)
    s += Math.floor(Math.random() * 2 ** 32)
      .toString(16)
      .padStart(8, "0");
  return `${Date.now().toString(36)}-${s}`;
}

function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: Error) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const isThenable = (v: unknown): v is Promise<void> => typeof (v as { then?: unknown } | undefined)?.then === "function";

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

// --- Server-Sent Events -------------------------------------------------------------------------------

/** The part of the EventSource API `subscribeEvents` uses: the browser's, or a Node implementation. */
export interface EventSourceLike {
  readonly readyState: number;
  /* eslint-disable @typescript-eslint/no-explicit-any */
  onopen: ((ev: any) => void) | null;
  onmessage: ((ev: any) => void) | null;
  onerror: ((ev: any) => void) | null;
  addEventListener(type: string, listener: (ev: any) => void): void;
  /* eslint-enable @typescript-eslint/no-explicit-any */
  close(): void;
}
export type EventSourceConstructor = new (url: string) => EventSourceLike;

/** What a `gap` event says: messages asked for are gone (retention), or the stream was recreated. */
export type EventsGap = { truncated: true; epochChanged?: true; after: number; firstSeq: number; lastSeq: number; epoch: string; was?: string };

export interface SubscribeEventsOptions {
  /** Where to start: `{seq}` (from this seq), `{last}`, `{time}`, or `{lastEventId}` (resume a stored position). Live when omitted. */
  from?: { seq: number } | { last: number } | { time: string | Date } | { lastEventId: string };
  /** Access token, sent as `?token=` (EventSource cannot set headers). */
  token?: string;
  /** Called before every (re)open for a fresh token; a stream refused as `unauthorized` (expired) then reopens. */
  getToken?: () => string | Promise<string>;
  /** EventSource implementation; defaults to `globalThis.EventSource`. */
  EventSource?: EventSourceConstructor;
  /** Retention removed messages asked for, or the stream was recreated (`epochChanged`): delivery goes on after it. */
  onGap?: (gap: EventsGap) => void;
  /** Connection trouble: the EventSource reconnects by itself; a refused stream is reopened with backoff. */
  onError?: (e: GatewayError) => void;
  onOpen?: () => void;
  /** Reopen delay bounds after a refused stream (same full-jitter backoff as the WebSocket client). */
  minDelayMs?: number;
  maxDelayMs?: number;
}

export interface EventSubscription {
  readonly channel: string;
  /** Last seq delivered to the handler (0: none yet). */
  readonly lastSeq: number;
  /** The `<epoch>:<seq>` id of the last message: store it and pass it as `from: {lastEventId}` to resume later. */
  readonly lastEventId: string;
  close(): void;
}

/**
 * Subscribes to `pattern` over Server-Sent Events (`GET /v1/channels/{pattern}/events`): for one-way clients
 * and networks that block WebSockets. The browser's EventSource reconnects by itself and sends the last
 * event id, and the gateway resumes after it with no gap and no duplicate; a stream the server refused or
 * that failed for good (the EventSource gives up on non-200 answers) is reopened here with backoff from the
 * last id. `url` is the gateway's base URL (`http(s)://host:port`; `ws(s)://…/ws` is accepted too).
 */
export function subscribeEvents<T = unknown>(
  url: string,
  pattern: string,
  handler: (msg: GatewayMessage<T>) => void,
  options: SubscribeEventsOptions = {},
): EventSubscription {
  const ES = options.EventSource ?? (globalThis as { EventSource?: EventSourceConstructor }).EventSource;
  if (!ES) throw new GatewayError("no_eventsource", "no EventSource implementation: pass options.EventSource", { temporary: false });
  const base = url
    .replace(/^ws(s?):/, "http$1:")
    .replace(/\/ws\/?$/, "")
    .replace(/\/+$/, "");
  const minDelay = options.minDelayMs ?? DEFAULT_OPTIONS.minDelayMs;
  const maxDelay = options.maxDelayMs ?? DEFAULT_OPTIONS.maxDelayMs;
  let es: EventSourceLike | undefined;
  let lastSeq = 0;
  let lastEventId = "";
  let closed = false;
  let failures = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let token = options.token;
  const noop = (): void => undefined;

  const urlFor = (): string => {
    const q = new URLSearchParams();
    const from = options.from;
    if (lastEventId !== "") q.set("last_event_id", lastEventId);
    else if (from && "seq" in from) q.set("from_seq", String(from.seq));
    else if (from && "last" in from) q.set("last", String(from.last));
    else if (from && "time" in from) q.set("since", from.time instanceof Date ? from.time.toISOString() : from.time);
    else if (from && "lastEventId" in from) q.set("last_event_id", from.lastEventId);
    if (token !== undefined) q.set("token", token);
    const qs = q.toString();
    return `${base}/v1/channels/${encodeURIComponent(pattern)}/events${qs ? `?${qs}` : ""}`;
  };

  const reopenLater = (e?: GatewayError): void => {
    const delay = backoffDelay(failures++, minDelay, maxDelay);
    options.onError?.(e ?? new GatewayError("closed", `event stream failed; reopening in ${delay} ms`));
    timer = setTimeout(() => {
      if (!closed) void open();
    }, delay);
  };

  const open = async (): Promise<void> => {
    if (options.getToken) {
      try {
        token = await options.getToken();
      } catch (e) {
        return reopenLater(new GatewayError("token_error", `getToken failed: ${(e as Error)?.message ?? String(e)}`, { cause: e }));
      }
      if (closed) return;
    }
    const s = new ES(urlFor());
    es = s;
    s.onopen = () => {
      failures = 0;
      options.onOpen?.();
    };
    s.onmessage = (ev: { data: string; lastEventId?: string }) => {
      let f: Record<string, unknown>;
      try {
        f = JSON.parse(ev.data) as Record<string, unknown>;
      } catch {
        return options.onError?.(new GatewayError("bad_json", "an event's data is not JSON"));
      }
      const seq = typeof f.seq === "number" ? f.seq : 0;
      if (ev.lastEventId) lastEventId = ev.lastEventId;
      if (seq <= lastSeq) return; // delivered before (a resume never repeats one; kept as a guard)
      lastSeq = seq;
      const msg = { ...f, ack: noop, nak: noop, term: noop } as unknown as GatewayMessage<T>;
      try {
        handler(msg);
      } catch (e) {
        options.onError?.(new GatewayError("handler_error", `handler threw: ${(e as Error)?.message ?? String(e)}`, { cause: e }));
      }
    };
    s.addEventListener("gap", (ev: { data: string; lastEventId?: string }) => {
      const gap = JSON.parse(ev.data) as EventsGap;
      if (ev.lastEventId) lastEventId = ev.lastEventId;
      if (gap.epochChanged) lastSeq = 0; // the new stream numbers from 1
      options.onGap?.(gap);
    });
    // The server's `err` event (a replay failed; the stream ends and the EventSource resumes).
    s.addEventListener("err", (ev: { data: string }) => options.onError?.(wireError(JSON.parse(ev.data) as Frame)));
    s.onerror = () => {
      if (closed) return;
      if (s.readyState !== 2) return void options.onError?.(new GatewayError("closed", "event stream interrupted; reconnecting"));
      // CLOSED: the server refused the stream (a status other than 200) or it failed for good. The EventSource
      // does not say why: ask once with fetch, stop on a permanent refusal, otherwise reopen with backoff.
      s.close();
      void refusal(urlFor()).then((e) => {
        if (closed) return;
        if (e && !e.temporary && !(e.code === "unauthorized" && options.getToken)) {
          closed = true;
          return options.onError?.(e);
        }
        reopenLater(e);
      });
    };
  };
  void open();

  return {
    channel: pattern,
    get lastSeq() {
      return lastSeq;
    },
    get lastEventId() {
      return lastEventId;
    },
    close() {
      closed = true;
      clearTimeout(timer);
      es?.close();
    },
  };
}
