// Gateway WebSocket publish (protocol v1): {"op":"pub","id":N,"channel":…,"data":…} → {"op":"ok","id":N,"seq":…}
// or {"op":"err","id":N,"code":…}. After a close (e.g. 1001, server going away) the next publish reconnects.
import WebSocket from "ws";
import type { PublisherSetup } from "./types.js";
import { PublishError } from "./types.js";
import { itemJson, itemOutcome, type BatchCapable, type BatchEntry } from "./batching.js";

type Pending = { resolve(r: Reply): void; reject(e: Error): void; timer: NodeJS.Timeout };
type Reply = { op?: string; id?: number; code?: string; message?: string; results?: { error?: string; message?: string }[] };

export class GatewayWsPublisher implements BatchCapable {
  readonly acks = true;
  private ws: WebSocket | null = null;
  private opening: Promise<WebSocket> | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly channelJson = new Map<string, string>();
  private readonly url: string;

  constructor(private readonly setup: PublisherSetup) {
    this.url = `ws://${setup.host}:${setup.opts.port}${setup.opts.path}`;
  }

  async connect(): Promise<void> {
    await this.socket();
  }

  private socket(): Promise<WebSocket> {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) return Promise.resolve(this.ws);
    this.opening ??= new Promise<WebSocket>((resolve, reject) => {
      const ws = new WebSocket(this.url, { perMessageDeflate: false, handshakeTimeout: this.setup.opts.timeoutMs });
      ws.once("open", () => {
        this.ws = ws;
        this.opening = null;
        resolve(ws);
      });
      ws.once("error", (err) => {
        if (this.opening) {
          this.opening = null;
          reject(err);
        }
      });
      ws.on("message", (d) => this.onReply(d.toString()));
      ws.on("close", (code) => {
        if (this.ws === ws) this.ws = null;
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

  private json(channel: string): string {
    let ch = this.channelJson.get(channel);
    if (!ch) {
      ch = JSON.stringify(channel);
      this.channelJson.set(channel, ch);
    }
    return ch;
  }

  async publish(channel: string, body: string, msgId: string | undefined): Promise<void> {
    const ws = await this.socket();
    const id = this.nextId++;
    const frame = `{"op":"pub","id":${id},"channel":${this.json(channel)},"data":${body}${msgId ? `,"msgId":${JSON.stringify(msgId)}` : ""}}`;
    await this.request(ws, id, frame);
  }

  /** {"op":"pub","id":N,"batch":[…]} → {"op":"ok","id":N,"results":[…]} (--batch). */
  async publishBatch(items: readonly BatchEntry[]): Promise<(PublishError | null)[]> {
    const ws = await this.socket();
    const id = this.nextId++;
    const frame = `{"op":"pub","id":${id},"batch":[${items.map((e) => itemJson(e, this.json(e.channel))).join(",")}]}`;
    const reply = await this.request(ws, id, frame);
    return items.map((_, i) => itemOutcome(reply.results?.[i]));
  }

  private request(ws: WebSocket, id: number, frame: string): Promise<Reply> {
    return new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new PublishError("ack timeout", "timeout"));
      }, this.setup.opts.timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      ws.send(frame, (err) => {
        if (!err) return;
        clearTimeout(timer);
        this.pending.delete(id);
        reject(new PublishError(`send failed: ${err.message}`, "send", { cause: err }));
      });
    });
  }

  private onReply(str: string): void {
    let r: Reply;
    try {
      r = JSON.parse(str) as Reply;
    } catch {
      return;
    }
    if (typeof r.id !== "number") return;
    const p = this.pending.get(r.id);
    if (!p) return;
    this.pending.delete(r.id);
    clearTimeout(p.timer);
    if (r.op === "ok") p.resolve(r);
    else p.reject(new PublishError(`${r.code ?? "error"}: ${r.message ?? ""}`, r.code ?? "error"));
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
