import { backoffDelay } from "./backoff.js";
import { GatewayError, messageOf, wireError } from "./errors.js";
import type { GatewayEvent } from "./events.js";
import type { ClientOptions } from "./options.js";
import type { Frame, WebSocketLike } from "./types.js";
import { clearTimer, hostFetch, setTimer, type Timer } from "./platform.js";
import { refusal } from "./refusal.js";
import { deferred } from "./util.js";
import { JSON_WIRE, type Wire } from "./wire.js";

export { SUBPROTOCOL } from "./wire.js";

/** WebSocket readyState OPEN. */
const OPEN = 1;
/**
 * How long an open socket that reported an `error`, or one the client closes, may take to report its `close`
 * before it is taken for closed. A socket that is not open is taken for closed at once (on the next task):
 * Node 22's built-in WebSocket reports a refused connection or upgrade with `error` alone.
 */
const CLOSE_GRACE_MS = 1_000;

/**
 * One explicit state: `idle` (never connected), `connecting` (a socket or a token is on its way), `open`,
 * `waiting` (backing off before the next attempt), `closed` (stopped for good).
 */
export type ConnectionState = "idle" | "connecting" | "open" | "waiting" | "closed";

/** What the connection tells its owner. */
export interface ConnectionHooks {
  emit(e: GatewayEvent): void;
  /** The socket opened (state is `open`): resubscribe and flush. */
  opened(ws: WebSocketLike): void;
  /** A frame that is not a reply to a request; returns false when nobody took it. */
  frame(ws: WebSocketLike, f: Frame): boolean;
  /** The connection stopped for good (close(), or 4001 without getToken): reject what waits. */
  stopped(error: GatewayError): void;
}

/**
 * Where to connect and with which subprotocols, with the token where `tokenVia` puts it. The wire's
 * subprotocol goes with a `bearer.` one, and alone when the wire must be asked for (a binary one). The URL
 * says `coalesce=1`: the SDK reads coalesced frames (PROTOCOL.md "Coalesced frames").
 */
export function connectTarget(
  url: string,
  token: string | undefined,
  tokenVia: "query" | "protocol",
  wire: Wire = JSON_WIRE,
): { url: string; protocols?: string[] } {
  const own = wire.mustOffer ? { protocols: [wire.subprotocol] } : {};
  url = `${url}${url.includes("?") ? "&" : "?"}coalesce=1`;
  if (token && tokenVia === "query") return { url: `${url}&token=${encodeURIComponent(token)}`, ...own };
  if (token) return { url, protocols: [wire.subprotocol, `bearer.${token}`] };
  return { url, ...own };
}

/**
 * The socket and its lifecycle: opening (with a fresh token), the connect and ping timeouts, full-jitter reconnects,
 * close codes, and request/reply by `id`. It knows nothing of subscriptions or publishes: it tells its owner
 * through `ConnectionHooks`.
 */
export class Connection {
  state: ConnectionState = "idle";
  ws: WebSocketLike | undefined;
  /** Why the connection stopped (close(), or a 4001 without getToken); later calls reject with it. */
  stopped: GatewayError | undefined;
  private attempt = 0;
  private reconnectTimer: Timer | undefined;
  private connectTimer: Timer | undefined;
  private pingTimer: Timer | undefined;
  /** A frame arrived since the last ping. */
  private heard = true;
  private nextId = 1;
  private readonly pending = new Map<number, (f: Frame) => void>();
  private closedWaiters: (() => void)[] = [];
  /** Takes the socket for closed when it does not say so itself (CLOSE_GRACE_MS). */
  private graceTimer: Timer | undefined;
  /** Where the current socket went and with which token: a refused upgrade is asked about there (`askWhy`). */
  private target: { url: string; token: string | undefined } | undefined;
  /** A fresh token was tried after an `unauthorized` refusal; cleared by an open. */
  private freshTokenTried = false;
  private readonly firstOpen = deferred<void>();
  private readonly url: string;

  constructor(
    url: string,
    private readonly opts: ClientOptions,
    private readonly hooks: ConnectionHooks,
    private readonly stats: { reconnects: number },
  ) {
    this.url = url.replace(/^http(s?):/, "ws$1:");
  }

  /** Starts connecting (and reconnecting); resolves on the first successful open. */
  connect(): Promise<void> {
    if (this.state === "closed") return Promise.reject(this.stopped);
    if (this.state === "idle") void this.open();
    return this.firstOpen.promise;
  }

  /** Stops for good with `error` and closes the socket with 1000; resolves once it is closed. */
  close(error: GatewayError): Promise<void> {
    if (this.state === "closed") return Promise.resolve();
    this.stop(error);
    const ws = this.ws;
    if (!ws) return Promise.resolve();
    const done = new Promise<void>((r) => this.closedWaiters.push(r));
    this.closeSoon(ws, ws.readyState === OPEN ? CLOSE_GRACE_MS : 0, 1000, "client closed");
    try {
      ws.close(1000, "client closed");
    } catch {
      /* not open yet in this runtime: the grace timer ends it */
    }
    return done;
  }

  /** Calls `fn` when the current socket closes (a reply that will not come); returns a function that forgets it. */
  onceClosed(fn: () => void): () => void {
    this.closedWaiters.push(fn);
    return () => {
      const i = this.closedWaiters.indexOf(fn);
      if (i >= 0) this.closedWaiters.splice(i, 1);
    };
  }

  /** The connection is healthy again (every subscription resumed): the next failure starts the backoff over. */
  resetBackoff(): void {
    this.attempt = 0;
  }

  /** Sends `frame` with a fresh `id` and calls `onReply` with the frame that answers it. */
  request(ws: WebSocketLike, frame: Record<string, unknown>, onReply: (f: Frame) => void): void {
    const id = this.nextId++;
    this.pending.set(id, onReply);
    try {
      ws.send(this.opts.wire.encode({ ...frame, id }));
    } catch {
      this.pending.delete(id); // the socket is closing; its close event re-sends what needs it
    }
  }

  private async open(): Promise<void> {
    this.state = "connecting";
    this.hooks.emit({ type: "connecting", attempt: this.attempt });
    let token = this.opts.token;
    if (this.opts.getToken) {
      try {
        token = await this.opts.getToken();
      } catch (e) {
        this.hooks.emit({ type: "error", error: new GatewayError("token_error", `getToken failed: ${messageOf(e)}`, { cause: e }) });
        this.scheduleReconnect();
        return;
      }
      if (this.state !== "connecting") return;
    }
    const target = connectTarget(this.url, token, this.opts.tokenVia, this.opts.wire);
    let ws: WebSocketLike;
    try {
      ws = target.protocols ? new this.opts.WebSocket(target.url, target.protocols) : new this.opts.WebSocket(target.url);
    } catch (e) {
      this.hooks.emit({ type: "error", error: new GatewayError("no_websocket", `cannot open ${target.url}: ${messageOf(e)}`, { cause: e }) });
      this.scheduleReconnect();
      return;
    }
    if (this.opts.wire.mustOffer) ws.binaryType = "arraybuffer";
    this.ws = ws;
    this.target = { url: target.url, token };
    this.connectTimer = setTimer(() => {
      if (this.ws !== ws || this.state !== "connecting") return;
      this.closeSoon(ws, 0, 1006, "connect timeout");
      try {
        ws.close();
      } catch {
        /* closing already */
      }
    }, this.opts.connectTimeoutMs);
    ws.onopen = () => this.ws === ws && this.onOpen(ws);
    ws.onmessage = (ev: { data: unknown }) => this.ws === ws && this.onFrame(ws, ev.data);
    ws.onclose = (ev: { code?: number; reason?: string }) => this.onClose(ws, ev.code ?? 1006, ev.reason ?? "");
    // Browsers and `ws` report a `close` right after the `error`; Node 22's built-in WebSocket does not after a
    // refused connection or upgrade, and its readyState stays CONNECTING: the socket is then taken for closed.
    ws.onerror = () => this.ws === ws && this.closeSoon(ws, ws.readyState === OPEN ? CLOSE_GRACE_MS : 0, 1006, "");
  }

  /** Handles `ws` as closed with `code` after `ms` unless its own `close` came first (once, either way). */
  private closeSoon(ws: WebSocketLike, ms: number, code: number, reason: string): void {
    clearTimer(this.graceTimer);
    this.graceTimer = setTimer(() => this.onClose(ws, code, reason), ms);
  }

  private onOpen(ws: WebSocketLike): void {
    clearTimer(this.connectTimer);
    if (this.state === "closed") return;
    this.state = "open";
    this.freshTokenTried = false;
    this.hooks.emit({ type: "connected" });
    this.firstOpen.resolve();
    this.keepAlive(ws);
    this.hooks.opened(ws);
  }

  /**
   * A `ping` every pingIntervalMs; when nothing at all arrives within pingTimeoutMs of one, the link is dead
   * (a half-open TCP connection, as a phone changing networks leaves behind): drop it without waiting for a
   * close handshake that cannot complete, and reconnect. A dead link is noticed within the sum of the two.
   */
  private keepAlive(ws: WebSocketLike): void {
    const { pingIntervalMs: every, pingTimeoutMs: within } = this.opts;
    if (every === 0) return;
    this.pingTimer = setTimer(() => {
      if (this.ws !== ws || this.state !== "open") return;
      this.heard = false;
      this.request(ws, { op: "ping" }, () => undefined);
      this.pingTimer = setTimer(() => {
        if (this.ws !== ws) return;
        if (this.heard) return this.keepAlive(ws);
        this.onClose(ws, 1006, "ping timeout");
        try {
          ws.close();
        } catch {
          /* already closing */
        }
      }, within);
    }, every - within);
  }

  private onFrame(ws: WebSocketLike, data: unknown): void {
    this.heard = true;
    const frames = this.opts.wire.decode(data);
    if (!frames)
      return this.hooks.emit({ type: "error", error: new GatewayError("bad_json", `server sent a frame that is not ${this.opts.wire.subprotocol}`) });
    for (const f of frames) if (this.ws === ws) this.onOne(ws, f);
  }

  private onOne(ws: WebSocketLike, f: Frame): void {
    if (this.hooks.frame(ws, f)) return;
    if (typeof f.id === "number" && this.pending.has(f.id)) {
      const reply = this.pending.get(f.id)!;
      this.pending.delete(f.id);
      return reply(f);
    }
    if (f.op === "err") this.hooks.emit({ type: "error", error: wireError(f) });
  }

  private onClose(ws: WebSocketLike, code: number, reason: string): void {
    if (this.ws !== ws) return;
    const upgradeFailed = this.state === "connecting";
    clearTimer(this.connectTimer);
    clearTimer(this.pingTimer);
    clearTimer(this.graceTimer);
    this.ws = undefined;
    this.pending.clear();
    for (const w of this.closedWaiters.splice(0)) w();
    if (this.state === "closed") {
      this.hooks.emit({ type: "disconnected", code, reason, willReconnect: false });
      return;
    }
    // 4403: the server disconnected this user and asks it not to come back (4012 asks for a reconnect).
    if (code === 4403) {
      this.hooks.emit({ type: "disconnected", code, reason, willReconnect: false });
      this.stop(new GatewayError("disconnected", `disconnected by the server (close 4403): ${reason}`));
      return;
    }
    if (code === 4001) {
      this.hooks.emit({ type: "tokenExpired" });
      if (!this.opts.getToken) {
        this.hooks.emit({ type: "disconnected", code, reason, willReconnect: false });
        this.stop(new GatewayError("token_expired", "the token expired (close 4001) and no getToken option is set"));
        return;
      }
    }
    if (upgradeFailed && typeof hostFetch() === "function") return void this.askWhy(code, reason);
    this.retry(code, reason);
  }

  private retry(code: number, reason: string): void {
    const delay = this.scheduleReconnect();
    this.hooks.emit({ type: "disconnected", code, reason, willReconnect: true, reconnectInMs: delay });
  }

  /**
   * A socket that never opened: no WebSocket API shows the answer to a refused upgrade, so the same URL is
   * asked again with fetch (the gateway answers a plain `GET /ws` as it would the upgrade). A refusal is
   * reported as an `error`; a permanent one stops the client, except `unauthorized` with a `getToken`, which
   * gets one more attempt with a fresh token. Anything else (no answer, a temporary refusal, a gateway too old
   * to answer, `not_found`) is retried with backoff.
   */
  private async askWhy(code: number, reason: string): Promise<void> {
    this.state = "waiting";
    const { url, token } = this.target!;
    const viaHeader = token !== undefined && this.opts.tokenVia === "protocol";
    const e = await refusal(url.replace(/^ws(s?):/, "http$1:"), {
      timeoutMs: this.opts.connectTimeoutMs,
      ...(viaHeader ? { headers: { authorization: `Bearer ${token}` } } : {}),
    });
    if (this.state !== "waiting" || this.ws) return; // closed meanwhile
    if (!e || e.code === "not_found") return this.retry(code, reason);
    this.hooks.emit({ type: "error", error: e });
    const freshToken = e.code === "unauthorized" && this.opts.getToken !== undefined && !this.freshTokenTried;
    if (e.temporary || freshToken) {
      this.freshTokenTried ||= freshToken;
      return this.retry(code, reason);
    }
    this.hooks.emit({ type: "disconnected", code, reason, willReconnect: false });
    this.stop(e);
  }

  private scheduleReconnect(): number {
    const delay = backoffDelay(this.attempt, this.opts.minDelayMs, this.opts.maxDelayMs);
    this.attempt++;
    this.state = "waiting";
    this.reconnectTimer = setTimer(() => {
      this.reconnectTimer = undefined;
      if (this.state !== "waiting") return;
      this.stats.reconnects++;
      void this.open();
    }, delay);
    return delay;
  }

  private stop(error: GatewayError): void {
    this.state = "closed";
    this.stopped = error;
    clearTimer(this.reconnectTimer);
    clearTimer(this.connectTimer);
    clearTimer(this.pingTimer);
    clearTimer(this.graceTimer);
    this.firstOpen.promise.catch(() => undefined);
    this.firstOpen.reject(error);
    this.hooks.stopped(error);
  }
}
