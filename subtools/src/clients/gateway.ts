// A gateway subscriber on the `ws` engine (the `ws` package; `--engine ws`), kept as the reference the lean
// engine is measured against. Same protocol, same resume rules (GatewaySubscriptions).
import WebSocket from "ws";
import { ClientState, nowUs } from "../receiver.js";
import { scanned } from "../frame.js";
import { GatewaySubscriptions } from "./gateway-subs.js";
import { errorReason, retryDelayMs, type ClientSetup, type SubClient } from "./types.js";

export class GatewayClient implements SubClient {
  readonly state = new ClientState();
  private ws: WebSocket | null = null;
  private stopping = false;
  private attempt = 0;
  private firstAttempt: (() => void) | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private readonly subs: GatewaySubscriptions;
  private readonly url: string;

  constructor(private readonly setup: ClientSetup) {
    this.url = `ws://${setup.host}:${setup.port}${setup.path}`;
    this.subs = new GatewaySubscriptions(setup.channels, setup.from);
  }

  start(): Promise<void> {
    return new Promise((resolve) => {
      this.firstAttempt = resolve;
      this.setup.gate.enter(this.connect);
    });
  }

  stop(): Promise<void> {
    this.stopping = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.settleFirst();
    const ws = this.ws;
    if (!ws || ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        ws.terminate();
        resolve();
      }, 2_000);
      ws.once("close", () => {
        clearTimeout(t);
        resolve();
      });
      if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
      else ws.close(1000);
    });
  }

  private settleFirst(): void {
    const f = this.firstAttempt;
    this.firstAttempt = null;
    f?.();
  }

  private readonly connect = (): void => {
    this.retryTimer = null;
    if (this.stopping) {
      this.setup.gate.leave();
      this.settleFirst();
      return;
    }
    const ws = new WebSocket(this.url, { perMessageDeflate: false, skipUTF8Validation: true, handshakeTimeout: 10_000, localAddress: this.setup.localAddress });
    this.ws = ws;
    let opened = false;
    let inGate = true;
    let reason = "connection lost";
    const leave = (): void => {
      if (inGate) {
        inGate = false;
        this.setup.gate.leave();
      }
    };
    ws.on("open", () => {
      opened = true;
      leave();
      for (const f of this.subs.frames()) ws.send(f);
    });
    ws.on("message", this.onMessage);
    ws.on("error", (err) => {
      reason = errorReason(err);
      if (!opened) {
        this.state.lastFailure = reason;
        this.setup.events.connectFailed(err, reason);
      }
    });
    ws.on("close", () => {
      leave();
      if (this.state.subscribed) {
        this.state.subscribed = false;
        this.setup.events.unsubscribed(this.state);
      }
      if (this.ws === ws) this.ws = null;
      this.settleFirst();
      if (this.stopping) return;
      if (opened) this.setup.events.reconnecting();
      this.retryTimer = setTimeout(() => this.setup.gate.enter(this.connect), retryDelayMs(this.attempt++, reason));
    });
  };

  private readonly onMessage = (data: WebSocket.RawData): void => {
    const recv = nowUs();
    const str = data.toString();
    const kind = this.setup.rx.gatewayFrame(this.state, str, recv);
    if (kind === 1) this.subs.seen(scanned.sub, scanned.gwSeq);
    else if (kind === 0) {
      const r = this.subs.control(str);
      if (r === "subscribed") {
        this.attempt = 0;
        this.state.subscribed = true;
        this.state.everSubscribed = true;
        this.setup.events.subscribed(this.state);
        this.settleFirst();
      } else if (r === "refused") {
        this.setup.events.subError(this.subs.refusal);
        this.settleFirst();
      }
    }
  };
}
