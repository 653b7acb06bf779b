// A real WebSocket test client (ws) with request/reply by id and message collection, in JSON (fanout.v1) or
// in MessagePack (fanout.v1.msgpack: every frame binary both ways).
import { decode, encode } from "@msgpack/msgpack";
import WebSocket from "ws";
import { waitFor } from "./wait.js";

export type Frame = Record<string, unknown> & { op: string };
export type MsgFrame = Frame & { op: "msg"; channel: string; sub: string; seq: number; ts: number; data: unknown };

export class TestClient {
  readonly frames: Frame[] = [];
  readonly msgs: MsgFrame[] = [];
  /**
   * Each `msg` frame as it came, beside `msgs`: its text (fanout.v1), or its payload's bytes when they are
   * `data` (fanout.v1.msgpack); what the SDK's delta bases read. And the bytes of all `msg` frames.
   */
  readonly raws: (string | Uint8Array)[] = [];
  msgBytes = 0;
  /** Received frames that were text frames when the client speaks MessagePack (there should be none). */
  textFrames = 0;
  /** Every frame in the order received, messages and others (PROTOCOL.md frames, a coalesced one's each). */
  readonly log: Frame[] = [];
  /** Messages per WebSocket frame that held messages: 1 each, unless the server coalesced them. */
  readonly msgsPerFrame: number[] = [];
  closeCode?: number;
  closeReason?: string;
  private nextId = 1;
  private constructor(
    readonly ws: WebSocket,
    /** Speaks fanout.v1.msgpack: frames are MessagePack maps in binary frames (msg `data` stays bytes). */
    readonly msgpack = false,
  ) {
    ws.on("message", (d: Buffer, isBinary: boolean) => {
      if (msgpack && !isBinary) this.textFrames++;
      // A coalesced frame (PROTOCOL.md "Coalesced frames"): a MessagePack array, or JSON lines split at `}\n{`.
      const binary = msgpack && isBinary;
      const v = binary ? decode(d) : d.toString().split("}\n{");
      // Each frame's own text (a coalesced frame's part is byte for byte the frame sent alone).
      const texts = binary ? [] : (v as string[]).map((t, i, a) => `${i > 0 ? "{" : ""}${t}${i < a.length - 1 ? "}" : ""}`);
      const all = (binary ? (Array.isArray(v) ? v : [v]) : texts.map((t) => JSON.parse(t) as unknown)) as Frame[];
      let msgs = 0;
      for (const [i, f] of all.entries()) {
        this.log.push(f);
        if (f.op === "msg") {
          this.msgs.push(f as MsgFrame);
          this.raws.push(binary ? (f.data as Uint8Array) : (texts[i] as string));
          msgs++;
        } else this.frames.push(f);
      }
      if (msgs > 0) {
        this.msgsPerFrame.push(msgs);
        this.msgBytes += d.length;
      }
    });
    ws.on("close", (code: number, reason: Buffer) => {
      this.closeCode = code;
      this.closeReason = reason.toString();
    });
    ws.on("error", () => undefined);
  }

  /** Wraps a socket opened with options connect() does not take (source address, TLS CA); call at "open". */
  static wrap(ws: WebSocket): TestClient {
    return new TestClient(ws);
  }

  static async connect(url: string, opts: { protocols?: string[]; headers?: Record<string, string>; msgpack?: boolean } = {}): Promise<TestClient> {
    const protocols = opts.msgpack ? ["fanout.v1.msgpack", ...(opts.protocols ?? [])] : opts.protocols;
    const ws = new WebSocket(url, protocols, { headers: opts.headers });
    const c = new TestClient(ws, opts.msgpack);
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
      ws.once("unexpected-response", (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
    return c;
  }

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  sendRaw(data: string | Buffer): void {
    this.ws.send(data);
  }

  /** Sends a frame with a fresh id and resolves with the reply (ok or err) carrying that id. */
  async request(frame: Record<string, unknown>, timeoutMs = 10_000): Promise<Frame> {
    const id = `t${this.nextId++}`;
    this.ws.send(this.msgpack ? encode({ ...frame, id }) : JSON.stringify({ ...frame, id }));
    return waitFor(() => this.frames.find((f) => f.id === id), { timeoutMs, what: `reply to ${String(frame.op)} #${id}` });
  }

  async sub(channel: string, extra: Record<string, unknown> = {}): Promise<Frame> {
    const r = await this.request({ op: "sub", channel, ...extra });
    if (r.op !== "ok") throw new Error(`sub ${channel} failed: ${JSON.stringify(r)}`);
    return r;
  }

  async waitForMsgs(n: number, timeoutMs = 15_000): Promise<MsgFrame[]> {
    await waitFor(() => this.msgs.length >= n, { timeoutMs, what: `${n} messages (have ${this.msgs.length})` });
    return this.msgs;
  }

  async waitClosed(timeoutMs = 10_000): Promise<number> {
    return waitFor(() => this.closeCode, { timeoutMs, what: "close" });
  }

  close(): void {
    this.ws.close();
  }
}

/** `POST /v1/publish/{channel}`: `data` as JSON, or bytes (a Uint8Array) as `application/octet-stream`. */
export async function httpPublish(
  baseUrl: string,
  channel: string,
  data: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const bytes = data instanceof Uint8Array ? new Uint8Array(data) : undefined;
  const r = await fetch(`${baseUrl}/v1/publish/${encodeURIComponent(channel)}`, {
    method: "POST",
    body: bytes ?? JSON.stringify(data),
    headers: { "content-type": bytes ? "application/octet-stream" : "application/json", ...headers },
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}
