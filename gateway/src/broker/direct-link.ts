import { connect as tcpConnect, type Socket } from "node:net";
import { createInbox } from "@nats-io/transport-node";
import type { Logger } from "../log.js";
import { parseJsHeaders } from "./js-headers.js";
import { WireReader, WireProtocolError, type WireHandler } from "./nats-wire.js";
import type { DirectTransport, ReplySink } from "./direct-get.js";

/** The link's lifecycle: one value, never a set of flags. */
export type LinkState = "connecting" | "ready" | "down" | "unsupported" | "closed";

export type DirectLinkOptions = {
  /** `host:port` of the server to connect to now (the main connection's), "" when it has none. */
  server: () => string;
  /** Client name the server shows (monitoring `connz`). */
  name: string;
  sink: ReplySink;
  log: Logger;
  /** Handshake (INFO to PONG) time limit (5 s). */
  connectTimeoutMs?: number;
  /** A PING every this often; two unanswered close the link (10 s, as the main connection). */
  pingIntervalMs?: number;
  /** First and largest wait before connecting again (250 ms doubling up to 5 s). */
  backoffMs?: readonly [number, number];
};

/**
 * A NATS connection of the gateway's own, used only for direct gets: it publishes the requests and reads
 * the replies with `WireReader` (no nats.js message objects, headers parsed from the bytes in place).
 * Replay was bound by the worker's CPU, and half of it went to nats.js' parsing of the replies.
 *
 * It connects to the server the main connection uses, sends CONNECT (headers on, no echo), subscribes to
 * its inbox and is ready on the PONG. When it drops it tells the sink (the requests on its wire fail as
 * temporary and are retried through the main connection) and connects again with backoff. A server asking
 * for TLS or credentials is not served (the gateway has no NATS credential or TLS settings to give it): the
 * link then stays off and every request goes through nats.js.
 */
export class DirectLink implements DirectTransport {
  private state_: LinkState = "down";
  private sock?: Socket;
  private readonly prefix = createInbox();
  private readonly prefixLen: number;
  private connectTimer?: NodeJS.Timeout;
  private pingTimer?: NodeJS.Timeout;
  private retryTimer?: NodeJS.Timeout;
  private pingsOut = 0;
  /** First and largest wait before connecting again. */
  private readonly backoffRange: readonly [number, number];
  private backoff: number;
  /** Reply subject bytes of the last message and its token string: a batch's messages share them. */
  private lastSubject = Buffer.alloc(0);
  private lastToken = "";
  /** Times the link was ready (stats, tests). */
  connects = 0;

  constructor(private readonly o: DirectLinkOptions) {
    this.prefixLen = Buffer.byteLength(this.prefix) + 1;
    this.backoffRange = o.backoffMs ?? [250, 5_000];
    this.backoff = this.backoffRange[0];
  }

  get state(): LinkState {
    return this.state_;
  }

  get ready(): boolean {
    return this.state_ === "ready";
  }

  /** Connects (and keeps connecting after every loss until `close`). */
  start(): void {
    if (this.state_ === "down") this.connect();
  }

  send(subject: string, body: string, token: string): void {
    if (!this.sock || this.state_ !== "ready") throw new Error("direct link is not connected");
    this.sock.write(`PUB ${subject} ${this.prefix}.${token} ${Buffer.byteLength(body)}\r\n${body}\r\n`);
  }

  close(): void {
    this.state_ = "closed";
    clearTimeout(this.retryTimer);
    this.drop("closed", this.sock);
  }

  private connect(): void {
    const server = this.o.server();
    if (!server) return this.retry("no server");
    const colon = server.lastIndexOf(":");
    const host = server.slice(0, colon).replace(/^\[|\]$/g, "");
    const port = Number(server.slice(colon + 1));
    this.state_ = "connecting";
    const sock = tcpConnect({ host, port, noDelay: true });
    this.sock = sock;
    const reader = new WireReader(this.handler(sock));
    const limit = this.o.connectTimeoutMs ?? 5_000;
    this.connectTimer = setTimeout(() => this.drop(`no handshake with ${server} in ${limit} ms`, sock), limit);
    sock.on("data", (chunk: Buffer) => {
      try {
        reader.feed(chunk);
      } catch (e) {
        this.drop(e instanceof WireProtocolError ? e.message : String(e), sock);
      }
    });
    sock.on("error", (e) => this.drop(e.message, sock));
    sock.on("close", () => this.drop("closed by the server", sock));
  }

  private handler(sock: Socket): WireHandler {
    let greeted = false;
    return {
      info: (json) => {
        // Only the first INFO starts the handshake; later ones (cluster updates) may come before the PONG.
        if (greeted || sock !== this.sock) return;
        greeted = true;
        const info = JSON.parse(json) as { tls_required?: boolean; auth_required?: boolean; headers?: boolean };
        const refuse = info.tls_required
          ? "the server requires TLS"
          : info.auth_required
            ? "the server requires credentials"
            : info.headers === false
              ? "the server has headers off"
              : "";
        if (refuse) {
          this.state_ = "unsupported";
          this.o.log.info({ reason: refuse }, "direct gets share the main NATS connection");
          return this.drop(refuse, sock);
        }
        const connect = {
          verbose: false,
          pedantic: false,
          headers: true,
          no_responders: true,
          echo: false,
          protocol: 1,
          lang: "nodejs-gateway",
          version: "1",
          name: this.o.name,
        };
        sock.write(`CONNECT ${JSON.stringify(connect)}\r\nSUB ${this.prefix}.* 1\r\nPING\r\n`);
      },
      pong: () => {
        if (this.state_ === "connecting") return this.onReady();
        this.pingsOut = 0;
      },
      ping: () => void sock.write("PONG\r\n"),
      err: (text) => {
        this.o.log.warn({ err: text }, "direct-get connection: server error");
        // Permission and subject errors leave the connection open; the rest are followed by a close.
        if (/^permissions violation/i.test(text) || /^invalid subject/i.test(text)) return;
        this.drop(text, sock);
      },
      msg: (buf, subject, subjectEnd, headers, payload, end) => {
        const token = this.tokenOf(buf, subject, subjectEnd);
        const h = parseJsHeaders(buf, payload, headers);
        this.o.sink.reply(token, h, buf.subarray(payload, end));
      },
    };
  }

  private tokenOf(buf: Buffer, s: number, e: number): string {
    const last = this.lastSubject;
    if (e - s === last.length && buf.compare(last, 0, last.length, s, e) === 0) return this.lastToken;
    this.lastSubject = Buffer.from(buf.subarray(s, e));
    this.lastToken = buf.toString("latin1", s + this.prefixLen, e);
    return this.lastToken;
  }

  private onReady(): void {
    clearTimeout(this.connectTimer);
    this.state_ = "ready";
    this.connects++;
    this.backoff = this.backoffRange[0];
    this.pingsOut = 0;
    const every = this.o.pingIntervalMs ?? 10_000;
    this.pingTimer = setInterval(() => {
      if (++this.pingsOut > 2) return this.drop("no PONG to two PINGs", this.sock);
      this.sock?.write("PING\r\n");
    }, every);
    this.pingTimer.unref();
    this.o.log.debug({ server: this.o.server() }, "direct-get connection ready");
  }

  /** Ends `sock` if it is the current one: requests on it fail; connects again unless closed or unsupported. */
  private drop(why: string, sock: Socket | undefined): void {
    if (!sock || sock !== this.sock) return;
    this.sock = undefined;
    clearTimeout(this.connectTimer);
    clearInterval(this.pingTimer);
    sock.removeAllListeners("data");
    sock.on("error", () => undefined);
    sock.destroy();
    const was = this.state_;
    if (was !== "ready" && was !== "connecting") return; // closed or unsupported: it stays off
    // Down before the sink hears of it: the requests it sends again must not pick this link.
    this.state_ = "down";
    if (was === "ready") {
      this.o.log.warn({ why }, "direct-get connection lost; reads go through the main connection until it is back");
      this.o.sink.lost(this, why);
    }
    this.retry(why);
  }

  /** Connects again after the backoff (the link is down). */
  private retry(why: string): void {
    const wait = this.backoff;
    this.backoff = Math.min(this.backoff * 2, this.backoffRange[1]);
    this.o.log.debug({ why, retryInMs: wait }, "direct-get connection: connecting again");
    this.retryTimer = setTimeout(() => {
      if (this.state_ === "down") this.connect();
    }, wait);
    this.retryTimer.unref();
  }
}
