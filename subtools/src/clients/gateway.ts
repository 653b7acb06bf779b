// A gateway WebSocket subscriber (protocol v1, JSON text frames). On close 1001 (server going away) or
// any unexpected close it reconnects and resumes each channel from the last stream sequence it saw.
import WebSocket from "ws";
import { ClientState, nowUs } from "../receiver.js";
import type { FromSpec } from "../options.js";
import { scanned } from "../frame.js";
import { backoffMs, type ClientSetup, type SubClient } from "./types.js";

type Control = { op?: string; id?: number; code?: string; message?: string };

export class GatewayClient implements SubClient {
  readonly state = new ClientState();
  private ws: WebSocket | null = null;
  private stopping = false;
  private attempt = 0;
  private nextId = 1;
  private pendingSubs = 0;
  private firstAttempt: (() => void) | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  /** Last stream sequence seen per channel, for resuming after a reconnect. */
  private readonly lastSeq = new Map<string, number>();
  private readonly url: string;

  constructor(private readonly setup: ClientSetup) {
    this.url = `ws://${setup.host}:${setup.port}${setup.path}`;
  }

  start(): Promise<void> {
    return new Promise((resolve) => {
      this.firstAttempt = resolve;
      this.connect();
    });
  }

  stop(): Promise<void> {
    this.stopping = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.settleFirst();
    const ws = this.ws;
    if (!ws || ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(() => { ws.terminate(); resolve(); }, 2_000);
      ws.once("close", () => { clearTimeout(t); resolve(); });
      if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
      else ws.close(1000);
    });
  }

  private settleFirst(): void {
    const f = this.firstAttempt;
    this.firstAttempt = null;
    f?.();
  }

  private connect(): void {
    this.retryTimer = null;
    if (this.stopping) return;
    const ws = new WebSocket(this.url, { perMessageDeflate: false, skipUTF8Validation: true, handshakeTimeout: 10_000 });
    this.ws = ws;
    let opened = false;
    ws.on("open", () => {
      opened = true;
      this.subscribeAll(ws);
    });
    ws.on("message", this.onMessage);
    ws.on("error", (err) => {
      if (!opened) this.setup.events.connectFailed(err);
    });
    ws.on("close", () => {
      if (this.state.subscribed) { this.state.subscribed = false; this.setup.events.unsubscribed(this.state); }
      if (this.ws === ws) this.ws = null;
      this.settleFirst();
      if (this.stopping) return;
      if (opened) this.setup.events.reconnecting();
      this.retryTimer = setTimeout(() => this.connect(), backoffMs(this.attempt++));
    });
  }

  private subscribeAll(ws: WebSocket): void {
    this.pendingSubs = this.setup.channels.length;
    for (const channel of this.setup.channels) {
      const last = this.lastSeq.get(channel);
      const from: FromSpec | null = last !== undefined ? { seq: last + 1 } : this.setup.from;
      const frame: Record<string, unknown> = { op: "sub", id: this.nextId++, channel };
      if (from !== null) frame.from = from;
      ws.send(JSON.stringify(frame));
    }
  }

  private readonly onMessage = (data: WebSocket.RawData): void => {
    const recv = nowUs();
    const str = data.toString();
    const kind = this.setup.rx.gatewayFrame(this.state, str, recv);
    if (kind === 1) {
      if (scanned.gwSeq >= 0 && scanned.channel !== "") this.lastSeq.set(scanned.channel, scanned.gwSeq);
    } else if (kind === 0) {
      this.onControl(str);
    }
  };

  private onControl(str: string): void {
    let f: Control;
    try { f = JSON.parse(str) as Control; } catch { this.setup.rx.badFrames++; return; }
    if (f.op === "ok" && this.pendingSubs > 0) {
      if (--this.pendingSubs === 0) {
        this.attempt = 0;
        this.state.subscribed = true;
        this.state.everSubscribed = true;
        this.setup.events.subscribed(this.state);
        this.settleFirst();
      }
    } else if (f.op === "err") {
      this.setup.events.subError(`${f.code ?? "error"}: ${f.message ?? ""}`);
      this.settleFirst();
    }
  }
}
