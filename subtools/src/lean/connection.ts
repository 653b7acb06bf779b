// The lean client engine: a WebSocket client on a plain TCP socket, for load tools that hold tens of
// thousands of connections per process and must cost less than the server they measure.
//
// - Reads go into one buffer shared by every socket of the process (net `onread`): no allocation per read.
// - Frames are found by FrameReader; text payloads are handed over as (buffer, start, end), never decoded
//   to strings here.
// - The upgrade is a hand-written HTTP/1.1 request; the answer must be 101 with the right accept key.
// - Pings are answered with pongs, a close frame with a close frame; nothing else is sent unasked.
import { connect, type Socket } from "node:net";
import { createHash, randomBytes } from "node:crypto";
import { clientFrame, FrameError, FrameReader, Opcode, type FrameSink } from "./frame-reader.js";

const READ_BUFFER = Buffer.allocUnsafe(256 * 1024);
const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
const HEADER_END = Buffer.from("\r\n\r\n");
const MAX_HEADER = 16 * 1024;

/** What a connection tells its owner. */
export interface LeanHandler {
  /** The upgrade succeeded: `send` may be used. */
  open(): void;
  /** A whole text or binary message; `recvUs` is when its chunk arrived (µs since the epoch). */
  message(opcode: Opcode, buf: Buffer, start: number, end: number, recvUs: number): void;
  /** The connection is gone, opened or not; called once. */
  closed(info: CloseInfo): void;
}

export type CloseInfo = {
  /** The upgrade had succeeded. */
  opened: boolean;
  /** Close code the server sent, or null (connection lost, or refused before opening). */
  code: number | null;
  /** Why: the socket error's code (ECONNREFUSED, EADDRNOTAVAIL, EMFILE, ETIMEDOUT…), HTTP_<status>, or "closed". */
  reason: string;
  error: Error | null;
};

export type LeanOptions = {
  host: string;
  port: number;
  path: string;
  /** Source address to bind before connecting (spreading over loopback addresses). */
  localAddress?: string;
  /** Source port with localAddress (0 or absent: the kernel picks). */
  localPort?: number;
  /** Connect + upgrade must finish within this. */
  timeoutMs?: number;
  /** Extra request headers, e.g. Authorization. */
  headers?: Readonly<Record<string, string>>;
};

/** µs since the epoch, as pub-cluster stamps `t`. */
export const nowUs = (): number => performance.timeOrigin * 1000 + performance.now() * 1000;

const State = { Upgrading: 0, Open: 1, Closing: 2, Closed: 3 } as const;
type State = (typeof State)[keyof typeof State];

export class LeanSocket implements FrameSink {
  private readonly sock: Socket;
  private state: State = State.Upgrading;
  private readonly reader: FrameReader;
  private head: Buffer | null = null;
  private readonly key = randomBytes(16).toString("base64");
  private closeCode: number | null = null;
  private failure: { reason: string; error: Error | null } | null = null;
  private recvUs = 0;

  constructor(
    private readonly opts: LeanOptions,
    private readonly handler: LeanHandler,
  ) {
    this.reader = new FrameReader(this);
    this.sock = connect({
      host: opts.host,
      port: opts.port,
      localAddress: opts.localAddress,
      ...(opts.localAddress && opts.localPort ? { localPort: opts.localPort } : {}),
      noDelay: true,
      onread: { buffer: READ_BUFFER, callback: this.onRead },
    });
    this.sock.setTimeout(opts.timeoutMs ?? 10_000);
    this.sock.once("timeout", this.onConnectTimeout);
    this.sock.once("connect", this.onConnect);
    this.sock.on("error", (err: NodeJS.ErrnoException) => {
      this.failure ??= { reason: err.code ?? "error", error: err };
    });
    this.sock.once("close", this.onClose);
  }

  get isOpen(): boolean {
    return this.state === State.Open;
  }

  /** Sends one text message (masked, as a client must). False when the socket is not open. */
  send(text: string): boolean {
    if (this.state !== State.Open) return false;
    this.sock.write(clientFrame(Opcode.Text, Buffer.from(text), randomBytes(4)));
    return true;
  }

  /** Sends one binary message (masked). False when the socket is not open. */
  sendBinary(payload: Buffer): boolean {
    if (this.state !== State.Open) return false;
    this.sock.write(clientFrame(Opcode.Binary, payload, randomBytes(4)));
    return true;
  }

  /** Starts the closing handshake; the socket is destroyed if the server does not finish it in `graceMs`. */
  close(code = 1000, graceMs = 2_000): void {
    if (this.state === State.Upgrading) {
      this.destroy();
      return;
    }
    if (this.state !== State.Open) return;
    this.state = State.Closing;
    const p = Buffer.allocUnsafe(2);
    p.writeUInt16BE(code, 0);
    this.sock.write(clientFrame(Opcode.Close, p, randomBytes(4)));
    this.sock.setTimeout(graceMs);
    this.sock.once("timeout", () => this.sock.destroy());
  }

  destroy(): void {
    this.sock.destroy();
  }

  private readonly onConnectTimeout = (): void => {
    this.fail("ETIMEDOUT", new Error(`connect and upgrade took over ${this.opts.timeoutMs ?? 10_000} ms`));
  };

  private readonly onConnect = (): void => {
    const { host, port, path, headers } = this.opts;
    let req = `GET ${path} HTTP/1.1\r\nHost: ${host}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${this.key}\r\nSec-WebSocket-Version: 13\r\n`;
    if (headers) for (const [k, v] of Object.entries(headers)) req += `${k}: ${v}\r\n`;
    this.sock.write(req + "\r\n");
  };

  private readonly onRead = (n: number, buf: Buffer): boolean => {
    this.recvUs = nowUs();
    try {
      if (this.state === State.Upgrading) this.upgrade(buf, n);
      else if (this.state !== State.Closed) this.reader.feed(buf, 0, n);
    } catch (e) {
      if (e instanceof FrameError) this.fail("bad_frame", e);
      else throw e;
    }
    return true;
  };

  private upgrade(buf: Buffer, n: number): void {
    const chunk = this.head ? Buffer.concat([this.head, buf.subarray(0, n)]) : buf.subarray(0, n);
    const at = chunk.indexOf(HEADER_END);
    if (at < 0) {
      if (chunk.length > MAX_HEADER) {
        this.fail("bad_upgrade", new Error("upgrade response headers over 16 KiB"));
        return;
      }
      this.head = Buffer.from(chunk);
      return;
    }
    this.head = null;
    const text = chunk.toString("latin1", 0, at);
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
    if (status !== 101) {
      this.fail(`HTTP_${status}`, new Error(`upgrade refused: ${text.split("\r\n")[0]}`));
      return;
    }
    const accept = /\r\nsec-websocket-accept:\s*(\S+)/i.exec(text)?.[1];
    if (
      accept !==
      createHash("sha1")
        .update(this.key + GUID)
        .digest("base64")
    ) {
      this.fail("bad_upgrade", new Error("wrong Sec-WebSocket-Accept"));
      return;
    }
    this.state = State.Open;
    this.sock.setTimeout(0);
    this.sock.off("timeout", this.onConnectTimeout);
    this.handler.open();
    // Frames that came in the same chunk as the response.
    if (at + 4 < chunk.length && (this.state as State) === State.Open) this.reader.feed(chunk, at + 4, chunk.length);
  }

  message(opcode: Opcode, buf: Buffer, start: number, end: number): void {
    this.handler.message(opcode, buf, start, end, this.recvUs);
  }

  control(opcode: Opcode, buf: Buffer, start: number, end: number): void {
    if (opcode === Opcode.Ping) {
      if (this.state === State.Open) this.sock.write(clientFrame(Opcode.Pong, Buffer.from(buf.subarray(start, end)), randomBytes(4)));
    } else if (opcode === Opcode.Close) {
      this.closeCode = end - start >= 2 ? buf.readUInt16BE(start) : 1005;
      if (this.state === State.Open) {
        const p = Buffer.allocUnsafe(2);
        p.writeUInt16BE(this.closeCode === 1005 ? 1000 : this.closeCode, 0);
        this.sock.write(clientFrame(Opcode.Close, p, randomBytes(4)));
      }
      this.state = State.Closing;
      this.sock.end();
    }
  }

  private fail(reason: string, error: Error | null): void {
    this.failure ??= { reason, error };
    this.sock.destroy();
  }

  private readonly onClose = (): void => {
    const opened = this.state !== State.Upgrading;
    this.state = State.Closed;
    const f = this.failure;
    this.handler.closed({
      opened,
      code: this.closeCode,
      reason: f ? f.reason : this.closeCode !== null ? "closed" : "connection lost",
      error: f ? f.error : null,
    });
  };
}
