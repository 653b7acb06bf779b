// What the Socket.IO and centrifuge publishers share: one WebSocket (the `ws` package), requests with ids,
// acks matched by id with a timeout, and every pending request failed when the socket closes.
import WebSocket from "ws";
import type { Publisher, PublisherSetup } from "./types.js";
import { PublishError } from "./types.js";

type Pending = { resolve(): void; reject(e: Error): void; timer: NodeJS.Timeout };

export abstract class WsAckPublisher implements Publisher {
  readonly acks = true;
  protected ws: WebSocket | null = null;
  private opening: Promise<WebSocket> | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  constructor(
    protected readonly setup: PublisherSetup,
    private readonly path: string,
  ) {}

  /** The protocol's own opening after the WebSocket upgrade; resolves when publishing may start. */
  protected abstract handshake(ws: WebSocket): Promise<void>;
  /** The text frame publishing `body` (a JSON payload) to `channel` as request `id`. */
  protected abstract frame(id: number, channel: string, body: string): string;
  /** Handles one text frame from the server: settle requests with `settle`, answer pings. */
  protected abstract onText(ws: WebSocket, text: string): void;

  async connect(): Promise<void> {
    await this.socket();
  }

  private socket(): Promise<WebSocket> {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) return Promise.resolve(this.ws);
    this.opening ??= new Promise<WebSocket>((resolve, reject) => {
      const ws = new WebSocket(`ws://${this.setup.host}:${this.setup.opts.port}${this.path}`, {
        perMessageDeflate: false,
        handshakeTimeout: this.setup.opts.timeoutMs,
      });
      const fail = (err: Error): void => {
        if (this.opening) {
          this.opening = null;
          reject(err);
        }
      };
      ws.on("message", (d) => this.onText(ws, d.toString()));
      ws.once("error", fail);
      ws.once("open", () => {
        const t = setTimeout(() => {
          fail(new PublishError("protocol handshake timed out", "timeout"));
          ws.terminate();
        }, this.setup.opts.timeoutMs);
        this.handshake(ws).then(
          () => {
            clearTimeout(t);
            this.ws = ws;
            this.opening = null;
            resolve(ws);
          },
          (e: Error) => {
            clearTimeout(t);
            fail(e);
          },
        );
      });
      ws.on("close", (code) => {
        if (this.ws === ws) this.ws = null;
        fail(new PublishError(`connection closed (${code}) during the handshake`, "closed"));
        const err = new PublishError(`connection closed (${code})`, "closed");
        for (const [id, p] of this.pending) {
          clearTimeout(p.timer);
          this.pending.delete(id);
          p.reject(err);
        }
      });
    });
    return this.opening;
  }

  async publish(channel: string, body: string): Promise<void> {
    const ws = await this.socket();
    const id = this.nextId++;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new PublishError("ack timeout", "timeout"));
      }, this.setup.opts.timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      ws.send(this.frame(id, channel, body), (err) => {
        if (!err) return;
        this.settle(id, new PublishError(`send failed: ${err.message}`, "send", { cause: err }));
      });
    });
  }

  /** Resolves request `id`, or rejects it with `err`. */
  protected settle(id: number, err?: Error): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    if (err) p.reject(err);
    else p.resolve();
  }

  async flush(): Promise<void> {}

  async close(): Promise<void> {
    const ws = this.ws;
    if (!ws) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        ws.terminate();
        resolve();
      }, 2_000);
      ws.once("close", () => {
        clearTimeout(t);
        resolve();
      });
      ws.close(1000);
    });
  }
}
