import { connect as tcpConnect, isIP, type Socket } from "node:net";
import { connect as tlsConnect, type ConnectionOptions as TlsConnectOptions } from "node:tls";
import { createInbox } from "@nats-io/transport-node";
import type { Logger } from "../../../log.js";
import { parseJsHeaders } from "../headers.js";
import { WireReader, WireProtocolError, type WireHandler } from "./nats-wire.js";
import type { DirectTransport, ReplySink } from "./direct-get.js";
import { connectFields, NO_NATS_SECURITY, type NatsSecurity } from "../nats-security.js";

/** The link's lifecycle: one value, never a set of flags. */
export type LinkState = "connecting" | "ready" | "down" | "unsupported" | "closed";

export type DirectLinkOptions = {
  /** `host:port` of the server to connect to now (the main connection's), "" when it has none. */
  server: () => string;
  /** Client name the server shows (monitoring `connz`). */
  name: string;
  sink: ReplySink;
  log: Logger;
  /** Credentials and TLS: those of the main connection (none by default). */
  security?: NatsSecurity;
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
 * temporary and are retried through the main connection) and connects again with backoff.
 *
 * It authenticates as the main connection does (the same nats.js authenticator, called with the INFO's
 * nonce: user/password, token, nkey signature, or JWT and signature) and speaks TLS when the server requires
 * it or TLS is configured: upgraded after the INFO, or from the first byte with `handshakeFirst`. The reader
 * stays the same on a TLS socket (its chunks are fresh buffers too). A server it cannot serve (headers off,
 * or TLS configured and the server has none) leaves it off with a warning; every request then goes through
 * nats.js (`fanout_direct_link_up` 0).
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
  /** The last failure logged at warn (a lasting one is logged once, not per retry). */
  private lastWarning = "";
  /** Times the link was ready (stats, tests). */
  connects = 0;
  /** Times it tried to connect (tests). */
  attempts = 0;

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
    this.attempts++;
    const tls = this.security.tls;
    const sock = tls?.handshakeFirst ? tlsConnect({ ...this.tlsOptions(host), host, port }) : tcpConnect({ host, port });
    sock.setNoDelay(true);
    this.sock = sock;
    const reader: WireReader = new WireReader(this.handler(host, () => reader));
    const limit = this.o.connectTimeoutMs ?? 5_000;
    this.connectTimer = setTimeout(() => this.drop(`no handshake with ${server} in ${limit} ms`, this.sock), limit);
    this.listen(sock, reader);
  }

  private listen(sock: Socket, reader: WireReader): void {
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

  private get security(): NatsSecurity {
    return this.o.security ?? NO_NATS_SECURITY;
  }

  /** node:tls options: the configured CA and client certificate, the host name checked unless it is an address. */
  private tlsOptions(host: string): TlsConnectOptions {
    const t = this.security.tls;
    return { ca: t?.ca, cert: t?.cert, key: t?.key, servername: isIP(host) ? undefined : host, rejectUnauthorized: true };
  }

  /** Wraps the plain socket in TLS after the INFO; the handshake goes on once it is secure. */
  private startTls(plain: Socket, host: string, reader: WireReader, then: () => void): void {
    plain.removeAllListeners("data");
    plain.removeAllListeners("close");
    plain.removeAllListeners("error");
    plain.on("error", () => undefined);
    const secure = tlsConnect({ ...this.tlsOptions(host), socket: plain });
    this.sock = secure;
    this.listen(secure, reader);
    secure.once("secureConnect", () => {
      if (secure === this.sock) then();
    });
  }

  private handler(host: string, reader: () => WireReader): WireHandler {
    let greeted = false;
    return {
      info: (json) => {
        // Only the first INFO starts the handshake; later ones (cluster updates) may come before the PONG.
        const sock = this.sock;
        if (greeted || !sock) return;
        greeted = true;
        const info = JSON.parse(json) as { tls_required?: boolean; tls_available?: boolean; headers?: boolean; nonce?: string };
        const tls = this.security.tls;
        const refuse =
          info.headers === false
            ? "the server has headers off"
            : tls && !tls.handshakeFirst && !info.tls_required && !info.tls_available
              ? "TLS to NATS is configured and the server offers none"
              : "";
        if (refuse) {
          this.state_ = "unsupported";
          this.o.log.warn({ reason: refuse }, "direct-get connection off: direct gets share the main NATS connection (slower replay)");
          return this.drop(refuse, sock);
        }
        const hello = () => this.hello(info.nonce);
        if (!tls?.handshakeFirst && (info.tls_required || (tls && info.tls_available))) return this.startTls(sock, host, reader(), hello);
        hello();
      },
      pong: () => {
        if (this.state_ === "connecting") return this.onReady();
        this.pingsOut = 0;
      },
      ping: () => void this.sock?.write("PONG\r\n"),
      err: (text) => {
        // Permission and subject errors leave the connection open; the rest are followed by a close.
        if (/^permissions violation/i.test(text) || /^invalid subject/i.test(text)) {
          this.o.log.warn({ err: text }, "direct-get connection: server error");
          return;
        }
        this.drop(text, this.sock);
      },
      msg: (buf, subject, subjectEnd, headers, payload, end) => {
        const token = this.tokenOf(buf, subject, subjectEnd);
        const h = parseJsHeaders(buf, payload, headers);
        this.o.sink.reply(token, h, buf.subarray(payload, end));
      },
    };
  }

  /** CONNECT with the credentials for the server's nonce, the inbox subscription, and the PING whose PONG makes it ready. */
  private hello(nonce: string | undefined): void {
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
      ...connectFields(this.security, nonce),
    };
    this.sock?.write(`CONNECT ${JSON.stringify(connect)}\r\nSUB ${this.prefix}.* 1\r\nPING\r\n`);
  }

  /** The reason the link failed, at warn the first time it is seen (not on every retry of a lasting failure). */
  private warnOnce(why: string): void {
    if (why === this.lastWarning) return;
    this.lastWarning = why;
    this.o.log.warn({ why }, "direct-get connection failed; direct gets share the main NATS connection until it connects");
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
    this.lastWarning = "";
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
    // A handshake that fails (TLS, credentials, refused) is said once per reason, not on every retry.
    if (was === "connecting") this.warnOnce(why);
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
