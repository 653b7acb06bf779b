import { CloseCode, ErrorCode } from "../protocol/codes.js";
import type { TemplatedApp, us_listen_socket } from "../uws.js";
import { loadUws } from "../uws.js";
import { BackpressureMonitor } from "./backpressure.js";
import { handleFrame, releaseSession, replyErr, type HandlerContext } from "./handlers.js";
import { newSession, type Session, type Socket } from "./session.js";
import { Subscriptions } from "./subscriptions.js";

export const WS_PATH = "/ws";

/** Frames above the configured maximum and up to this cap get a 1009 close; larger ones are cut by uWS. */
export const hardPayloadCap = (max: number): number => Math.min(Math.max(max * 16, 1_048_576), 64 * 1_048_576);

/** The worker's WebSocket endpoint: the uWS behavior for `/ws`, its sockets, and drain. */
export class WsEndpoint {
  readonly sockets = new Set<Socket>();
  readonly backpressure: BackpressureMonitor;
  private listenSocket: us_listen_socket | undefined;

  private readonly ctx: HandlerContext;

  constructor(private readonly app: TemplatedApp, deps: Omit<HandlerContext, "subs">) {
    const subs = new Subscriptions(deps.config, deps.broker, deps.hub, deps.metrics, deps.log);
    this.ctx = { ...deps, subs };
    this.backpressure = new BackpressureMonitor(this.sockets, subs, deps.config, deps.metrics, deps.log);
    this.register();
  }

  private register(): void {
    const { config, metrics, log } = this.ctx;
    const uws = loadUws();
    this.app.ws<Session>(WS_PATH, {
      compression: uws.DISABLED,
      // uWS drops a connection over its limit without a close frame (1006); the gateway's own check below
      // answers frames up to this hard cap with a proper 1009.
      maxPayloadLength: hardPayloadCap(config.maxPayloadBytes),
      maxBackpressure: config.maxBackpressureBytes,
      idleTimeout: config.idleTimeoutSec,
      sendPingsAutomatically: true,
      upgrade: (res, req, context) => {
        if (this.ctx.isDraining()) {
          res.writeStatus("503 Service Unavailable").end("server is shutting down");
          return;
        }
        const ip = Buffer.from(res.getRemoteAddressAsText()).toString();
        res.upgrade(newSession(ip), req.getHeader("sec-websocket-key"), req.getHeader("sec-websocket-protocol"), req.getHeader("sec-websocket-extensions"), context);
      },
      open: (ws) => {
        this.sockets.add(ws);
        metrics.connections.inc();
      },
      message: (ws, message, isBinary) => {
        if (message.byteLength > config.maxPayloadBytes) {
          metrics.badFrames.labels("message_too_big").inc();
          ws.end(CloseCode.MessageTooBig, `frame larger than ${config.maxPayloadBytes} bytes`);
          return;
        }
        if (isBinary) return replyErr(this.ctx, ws, undefined, ErrorCode.BadJson, "frames must be UTF-8 JSON text, not binary");
        try {
          handleFrame(this.ctx, ws, Buffer.from(message).toString("utf8"));
        } catch (e) {
          log.error({ err: e }, "frame handler failed");
          replyErr(this.ctx, ws, undefined, ErrorCode.Internal, "internal error");
        }
      },
      drain: (ws) => this.backpressure.onDrain(ws),
      close: (ws) => {
        const s = ws.getUserData();
        s.closed = true;
        this.sockets.delete(ws);
        releaseSession(this.ctx, ws);
        metrics.connections.dec();
      },
    });
  }

  listen(host: string, port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.app.listen(host, port, (token) => {
        if (!token) return reject(new Error(`could not listen on ${host}:${port}`));
        this.listenSocket = token;
        this.backpressure.start();
        resolve();
      });
    });
  }

  stopListening(): void {
    if (this.listenSocket) loadUws().us_listen_socket_close(this.listenSocket);
    this.listenSocket = undefined;
  }

  /** Closes every socket with 1001 "going away": clients reconnect (elsewhere) and resume. */
  closeAll(reason = "server going away; reconnect"): void {
    this.backpressure.stop();
    for (const ws of [...this.sockets]) {
      if (!ws.getUserData().closed) ws.end(CloseCode.GoingAway, reason);
    }
  }
}
