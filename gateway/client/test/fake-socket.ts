import type { WebSocketConstructor, WebSocketLike } from "../src/index.js";

type Sent = Record<string, unknown> & { op: string; id?: number };

/**
 * An in-process stand-in for a WebSocket, driven by the test: `open()`, `deliver(frame)`, `drop(code)`.
 * What the client sends is parsed into `sent`. A close the client asks for is reported on a microtask, as
 * a real socket reports it later.
 */
export class FakeSocket implements WebSocketLike {
  readyState = 0;
  onopen: ((ev: unknown) => void) | null = null;
  onclose: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: unknown) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  readonly sent: Sent[] = [];
  closedWith: { code?: number; reason?: string } | undefined;
  /** false: like Node 22's built-in WebSocket before it opened, a close asked for is never reported. */
  reportsClose = true;

  constructor(
    readonly url: string,
    readonly protocols?: string | string[],
  ) {}

  send(data: string): void {
    if (this.readyState !== 1) throw new Error("not open");
    this.sent.push(JSON.parse(data) as Sent);
  }

  close(code?: number, reason?: string): void {
    if (this.readyState >= 2) return;
    this.readyState = 2;
    this.closedWith = { code, reason };
    if (this.reportsClose) queueMicrotask(() => this.drop(code ?? 1005, reason ?? ""));
  }

  // --- the server's side ---

  open(): void {
    this.readyState = 1;
    this.onopen?.({});
  }

  deliver(frame: Record<string, unknown>): void {
    this.onmessage?.({ data: JSON.stringify(frame) });
  }

  /** Answers the request `req` with `ok` and `extra`. */
  ok(req: Sent | undefined, extra: Record<string, unknown> = {}): void {
    if (!req) throw new Error("no request to answer");
    this.deliver({ op: "ok", id: req.id, ...extra });
  }

  drop(code = 1006, reason = ""): void {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.onclose?.({ code, reason });
  }

  /**
   * A refused connection or upgrade as Node 22's built-in WebSocket reports it: `error` and no `close`, the
   * readyState left as it was (CONNECTING).
   */
  fail(): void {
    this.reportsClose = false;
    this.onerror?.({});
  }

  /** The frames sent with `op`, in order. */
  frames(op: string): Sent[] {
    return this.sent.filter((f) => f.op === op);
  }
}

/** A WebSocket constructor whose sockets the test reaches through `sockets` (newest last). */
export function fakeWebSocket(): { WebSocket: WebSocketConstructor; sockets: FakeSocket[]; last: () => FakeSocket } {
  const sockets: FakeSocket[] = [];
  const WebSocket = class extends FakeSocket {
    constructor(url: string, protocols?: string | string[]) {
      super(url, protocols);
      sockets.push(this);
    }
  };
  return {
    WebSocket,
    sockets,
    last: () => {
      const s = sockets.at(-1);
      if (!s) throw new Error("no socket opened yet");
      return s;
    },
  };
}

/** Lets queued microtasks and promise callbacks run. */
export const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};
