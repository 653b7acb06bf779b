import { backoffDelay } from "./backoff.js";
import { GatewayError, messageOf, wireError } from "./errors.js";
import { DEFAULT_OPTIONS } from "./options.js";
import { httpBase } from "./history.js";
import { clearTimer, queryString, setTimer, type Timer } from "./platform.js";
import { refusal } from "./refusal.js";
import type { GatewayMessage } from "./types.js";
import { acceptSeq, type SeqTrack } from "./subscriptions.js";

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
  const base = httpBase(url);
  const minDelay = options.minDelayMs ?? DEFAULT_OPTIONS.minDelayMs;
  const maxDelay = options.maxDelayMs ?? DEFAULT_OPTIONS.maxDelayMs;
  let es: EventSourceLike | undefined;
  // Each seq once, in order per channel: a message the gateway repaired late can follow newer ones of other channels.
  const track: SeqTrack = { lastByChannel: new Map(), floor: 0, lastSeq: 0 };
  let lastEventId = "";
  let closed = false;
  let failures = 0;
  let timer: Timer | undefined;
  let token = options.token;
  const noop = (): void => undefined;

  const urlFor = (): string => {
    const from = options.from;
    let start: Record<string, string | undefined> = {};
    if (lastEventId !== "") start = { last_event_id: lastEventId };
    else if (from && "seq" in from) start = { from_seq: String(from.seq) };
    else if (from && "last" in from) start = { last: String(from.last) };
    else if (from && "time" in from) start = { since: from.time instanceof Date ? from.time.toISOString() : from.time };
    else if (from && "lastEventId" in from) start = { last_event_id: from.lastEventId };
    const qs = queryString({ ...start, token });
    return `${base}/v1/channels/${encodeURIComponent(pattern)}/events${qs ? `?${qs}` : ""}`;
  };

  const reopenLater = (e?: GatewayError): void => {
    const delay = backoffDelay(failures++, minDelay, maxDelay);
    options.onError?.(e ?? new GatewayError("closed", `event stream failed; reopening in ${delay} ms`));
    timer = setTimer(() => {
      if (!closed) void open();
    }, delay);
  };

  const open = async (): Promise<void> => {
    if (options.getToken) {
      try {
        token = await options.getToken();
      } catch (e) {
        return reopenLater(new GatewayError("token_error", `getToken failed: ${messageOf(e)}`, { cause: e }));
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
      if (!acceptSeq(track, typeof f.channel === "string" ? f.channel : pattern, seq)) return; // delivered before (kept as a guard)
      const msg = { ...f, ack: noop, nak: noop, term: noop } as unknown as GatewayMessage<T>;
      try {
        handler(msg);
      } catch (e) {
        options.onError?.(new GatewayError("handler_error", `handler threw: ${messageOf(e)}`, { cause: e }));
      }
    };
    s.addEventListener("gap", (ev: { data: string; lastEventId?: string }) => {
      const gap = JSON.parse(ev.data) as EventsGap;
      if (ev.lastEventId) lastEventId = ev.lastEventId;
      if (gap.epochChanged) {
        // The new stream numbers from 1.
        track.lastByChannel.clear();
        track.floor = 0;
        track.lastSeq = 0;
      }
      options.onGap?.(gap);
    });
    // The server's `err` event (a replay failed; the stream ends and the EventSource resumes). An operator's
    // `disconnected` that is not temporary, or `unsubscribed`, ends it for good: the EventSource is not left to reopen.
    s.addEventListener("err", (ev: { data: string }) => {
      const e = wireError(JSON.parse(ev.data) as Record<string, unknown>);
      if (!e.temporary && (e.code === "disconnected" || e.code === "unsubscribed")) {
        closed = true;
        s.close();
      }
      options.onError?.(e);
    });
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
      return track.lastSeq;
    },
    get lastEventId() {
      return lastEventId;
    },
    close() {
      closed = true;
      clearTimer(timer);
      es?.close();
    },
  };
}
