// What every lean-engine client shares: one LeanSocket at a time, reconnects with backoff (longer when this
// machine ran out of ports or descriptors), connection attempts through the process's gate, and the
// subscribed/unsubscribed bookkeeping. Subclasses speak a protocol: the gateway's, Socket.IO's, centrifuge's.
import { LeanSocket, type CloseInfo, type LeanHandler } from "../lean/connection.js";
import type { Opcode } from "../lean/frame-reader.js";
import { ClientState } from "../receiver.js";
import { retryDelayMs, type ClientSetup, type SubClient } from "./types.js";

export abstract class LeanClient implements SubClient, LeanHandler {
  readonly state = new ClientState();
  protected sock: LeanSocket | null = null;
  private stopping = false;
  private attempt = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private firstAttempt: (() => void) | null = null;
  private inGate = false;
  private onStopped: (() => void) | null = null;

  constructor(
    protected readonly setup: ClientSetup,
    private readonly path: string,
  ) {}

  start(): Promise<void> {
    return new Promise((resolve) => {
      this.firstAttempt = resolve;
      this.setup.gate.enter(this.connect);
    });
  }

  stop(): Promise<void> {
    this.stopping = true;
    if (this.retryTimer) {
      clearTimeout(this.retryTimer);
      this.retryTimer = null;
    }
    this.settleFirst();
    const sock = this.sock;
    if (!sock) return Promise.resolve();
    return new Promise((resolve) => {
      this.onStopped = resolve;
      sock.close(1000, 2_000);
    });
  }

  /** Protocol: the WebSocket is open; send what subscribes. */
  protected abstract opened(sock: LeanSocket): void;
  abstract message(opcode: Opcode, buf: Buffer, start: number, end: number, recvUs: number): void;

  private readonly connect = (): void => {
    this.retryTimer = null;
    if (this.stopping) {
      this.setup.gate.leave();
      this.settleFirst();
      return;
    }
    this.inGate = true;
    // A planned port found taken: the kernel picks one for this client (subtools/src/addresses.ts).
    const localPort = this.state.lastFailure === "EADDRINUSE" ? undefined : this.setup.localPort;
    this.sock = new LeanSocket({ host: this.setup.host, port: this.setup.port, path: this.path, localAddress: this.setup.localAddress, localPort }, this);
  };

  open(): void {
    this.leaveGate();
    this.opened(this.sock!);
  }

  closed(info: CloseInfo): void {
    this.leaveGate();
    this.sock = null;
    if (this.state.subscribed) {
      this.state.subscribed = false;
      this.setup.events.unsubscribed(this.state);
    }
    if (!info.opened) this.state.lastFailure = info.reason;
    if (!info.opened) this.setup.events.connectFailed(info.error ?? new Error(info.reason), info.reason);
    this.settleFirst();
    if (this.stopping) {
      this.onStopped?.();
      this.onStopped = null;
      return;
    }
    if (info.opened) this.setup.events.reconnecting();
    this.retryTimer = setTimeout(() => this.setup.gate.enter(this.connect), retryDelayMs(this.attempt++, info.reason));
  }

  protected markSubscribed(): void {
    this.attempt = 0;
    if (!this.state.subscribed) {
      this.state.subscribed = true;
      this.state.everSubscribed = true;
      this.setup.events.subscribed(this.state);
    }
    this.settleFirst();
  }

  protected refused(message: string): void {
    this.setup.events.subError(message);
    this.settleFirst();
  }

  private leaveGate(): void {
    if (!this.inGate) return;
    this.inGate = false;
    this.setup.gate.leave();
  }

  private settleFirst(): void {
    const f = this.firstAttempt;
    this.firstAttempt = null;
    f?.();
  }
}
