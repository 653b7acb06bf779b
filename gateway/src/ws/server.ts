import { CloseCode, ErrorCode } from "../protocol/codes.js";
import type { TemplatedApp, us_listen_socket } from "../uws.js";
import { loadUws } from "../uws.js";
import type { BackpressureMonitor } from "./backpressure.js";
import { handleFrame, releaseSession, replyErr, type HandlerContext } from "./handlers.js";
import type { Session, Socket } from "./session.js";
import { socketContext, type DoorDeps } from "./socket-context.js";
import { startAutoSubscriptions } from "./auto-subs.js";
import { clientIdOf, endSocket } from "./session.js";
import { UserSockets } from "./user-sockets.js";

export { closeReason, type ConnectionInfo } from "./user-sockets.js";

export const WS_PATH = "/ws";

/** Frames above the configured maximum and up to this cap get a 1009 close; larger ones are cut by uWS. */
export const hardPayloadCap = (max: number): number => Math.min(Math.max(max * 16, 1_048_576), 64 * 1_048_576);

/** The worker's WebSocket endpoint: the uWS behavior for `/ws`, its sockets, and drain. */
export class WsEndpoint {
  readonly sockets = new Set<Socket>();
  readonly backpressure: BackpressureMonitor;
  private readonly listenSockets: us_listen_socket[] = [];
  /** Where it listens (kept to listen again after a pause at the connection cap). */
  private readonly listens: { app: TemplatedApp; host: string; port: number }[] = [];
  private stopped = false;

  private readonly ctx: HandlerContext;
  /** The control plane's operations on these sockets. */
  readonly users: UserSockets;

  /** `extraApps`: more listeners with the same behavior (the TLS app); the hub must publish to all of them. */
  constructor(
    private readonly app: TemplatedApp,
    deps: DoorDeps,
    private readonly extraApps: TemplatedApp[] = [],
  ) {
    ({ ctx: this.ctx, backpressure: this.backpressure } = socketContext(this.sockets, deps));
    this.users = new UserSockets(this.sockets, this.ctx);
    this.register();
  }

  private register(): void {
    const { config, metrics, log } = this.ctx;
    const uws = loadUws();
    for (const app of [this.app, ...this.extraApps])
      app.ws<Session>(WS_PATH, {
        // permessage-deflate (COMPRESSION=shared) is negotiated per client: one without the extension gets
        // plain frames from the same publish.
        compression: config.server.compression === "shared" ? uws.SHARED_COMPRESSOR : uws.DISABLED,
        // uWS drops a connection over its limit without a close frame (1006); the gateway's own check below
        // answers frames up to this hard cap with a proper 1009.
        maxPayloadLength: hardPayloadCap(config.server.maxPayloadBytes),
        maxBackpressure: config.backpressure.maxBytes,
        idleTimeout: config.server.idleTimeoutSec,
        sendPingsAutomatically: true,
        // Origin, connection limits and the token (ws/guard.ts); async-safe when a token must be verified.
        upgrade: (res, req, context) => this.ctx.guard.upgrade(res, req, context, this.ctx.isDraining),
        open: (ws) => {
          if (config.server.compression !== "off") ws.getUserData().compress = true;
          this.ctx.guard.opened(ws);
          this.sockets.add(ws);
          metrics.connections.inc();
          this.ctx.events?.record("connect", { user: ws.getUserData().user, client: clientIdOf(ws), transport: "websocket" });
          const closeNow = ws.getUserData().closeOnOpen;
          if (closeNow) return endSocket(ws, closeNow.code, closeNow.reason);
          void startAutoSubscriptions(this.ctx, ws).catch((e) => log.error({ err: e }, "auto subscriptions failed"));
        },
        message: (ws, message, isBinary) => {
          if (!this.ctx.guard.frameAllowed(ws, (m) => replyErr(this.ctx, ws, undefined, ErrorCode.RateLimited, m))) return;
          if (message.byteLength > config.server.maxPayloadBytes) {
            metrics.badFrames.labels("message_too_big").inc();
            endSocket(ws, CloseCode.MessageTooBig, `frame larger than ${config.server.maxPayloadBytes} bytes`);
            return;
          }
          const decoded = ws.getUserData().codec.decode(message, isBinary);
          if (!decoded.ok) return replyErr(this.ctx, ws, undefined, decoded.code, decoded.message);
          try {
            handleFrame(this.ctx, ws, decoded);
          } catch (e) {
            this.ctx.failures.warn("frame", { err: e }, "frame handler failed");
            replyErr(this.ctx, ws, undefined, ErrorCode.Internal, "internal error");
          }
        },
        drain: (ws) => this.backpressure.onDrain(ws),
        close: (ws, code, message) => {
          const s = ws.getUserData();
          s.closed = true;
          this.ctx.guard.closed(ws);
          this.sockets.delete(ws);
          releaseSession(this.ctx, ws);
          metrics.connections.dec();
          // Who closed: the gateway's own code and reason, or the client's as it sent them, never mistaken for the gateway's.
          const closed = s.serverClose
            ? { by: "server" as const, ...s.serverClose }
            : { by: "client" as const, code, reason: Buffer.from(message).toString("utf8") };
          this.ctx.events?.record("disconnect", { user: s.user, client: clientIdOf(ws), transport: "websocket", ...closed });
        },
      });
    // A plain GET of the same path (no upgrade; uWS hands it on): what the upgrade would answer (guard.probe).
    for (const app of [this.app, ...this.extraApps]) {
      app.get(WS_PATH, (res, req) => this.ctx.guard.probe(res, req, this.ctx.isDraining));
      app.options(WS_PATH, (res, req) => this.ctx.guard.preflight(res, req));
    }
  }

  listen(host: string, port: number): Promise<void> {
    return this.listenWith(this.app, host, port).then(() => this.backpressure.start());
  }

  /** Listens with one of the extra apps (the TLS listener). */
  listenExtra(app: TemplatedApp, host: string, port: number): Promise<void> {
    return this.listenWith(app, host, port);
  }

  private listenWith(app: TemplatedApp, host: string, port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      app.listen(host, port, (token) => {
        if (!token) return reject(new Error(`could not listen on ${host}:${port}`));
        this.listenSockets.push(token);
        this.listens.push({ app, host, port });
        resolve();
      });
    });
  }

  /**
   * Closes the listeners for now (the worker is at its connection cap): connections open stay, new ones go to
   * the other workers on the port. A connection still in the closed socket's accept queue is reset (the
   * client sees ECONNRESET and retries) unless net.ipv4.tcp_migrate_req=1 moves it to another worker's queue.
   */
  pauseListening(): void {
    for (const t of this.listenSockets.splice(0)) loadUws().us_listen_socket_close(t);
  }

  /** Listens again on every address it listened on; false (and none listens) when one could not. */
  resumeListening(): boolean {
    if (this.stopped) return false;
    let all = true;
    for (const { app, host, port } of this.listens)
      app.listen(host, port, (token) => {
        if (token) this.listenSockets.push(token);
        else all = false;
      });
    if (!all) this.pauseListening();
    return all;
  }

  /** Closes the listeners for good (drain). */
  stopListening(): void {
    this.stopped = true;
    this.pauseListening();
  }

  /** Closes every socket with 1001 "going away": clients reconnect (elsewhere) and resume. */
  closeAll(reason = "server going away; reconnect"): void {
    this.backpressure.stop();
    this.users.endAll(CloseCode.GoingAway, reason);
  }
}
