import { anonymousIdentity, type Conn } from "../../auth/access.js";
import { hookHeaders } from "../../auth/http-auth.js";
import { CloseCode, ErrorCode } from "../../protocol/codes.js";
import { CENTRIFUGE_JSON_CODEC, CENTRIFUGE_PROTOBUF_CODEC } from "../../protocol/codecs.js";
import { Disconnect } from "../../protocol/centrifuge/codes.js";
import { writeUwsError } from "../../protocol/http-reply.js";
import type { TemplatedApp } from "../../uws.js";
import { loadUws } from "../../uws.js";
import type { BackpressureMonitor } from "../../ws/backpressure.js";
import { releaseSession, type HandlerContext } from "../../ws/handlers.js";
import { hardPayloadCap } from "../../ws/server.js";
import { endSocket, newClientId, newSession, type Session, type Socket } from "../../ws/session.js";
import { socketContext, type DoorDeps } from "../../ws/socket-context.js";
import { UserSockets } from "../../ws/user-sockets.js";
import type { ServerApiDeps } from "../context.js";
import { Door, type DoorSettings } from "./dispatch.js";

/** The path the Centrifuge SDKs connect to by default. */
export const CENTRIFUGE_WS_PATH = "/connection/websocket";

/**
 * The Centrifuge client protocol's WebSocket door (`/connection/websocket`, docs/centrifugo.md): the same
 * sessions, subscriptions, backpressure and authorization chain as /ws, its commands translated in
 * dispatch.ts, its replies and publications written by its codec (protocol/centrifuge/json.ts, or protobuf.ts
 * for sockets that offered `centrifuge-protobuf`). The token
 * comes in the `connect` command, not at the upgrade: the upgrade checks the origin and the connection limits
 * only, and a socket that sends no `connect` within the connect timeout is closed (3502 stale).
 */
export class CentrifugeEndpoint {
  readonly sockets = new Set<Socket>();
  private readonly backpressure: BackpressureMonitor;
  private readonly ctx: HandlerContext;
  private readonly door: Door;
  private pinger?: NodeJS.Timeout;
  /** The control plane's operations on these sockets (the same as on /ws's; the codec writes the protocol's pushes). */
  readonly users: UserSockets;

  constructor(
    private readonly apps: readonly TemplatedApp[],
    deps: DoorDeps,
    reads: ServerApiDeps,
    private readonly settings: DoorSettings,
  ) {
    ({ ctx: this.ctx, backpressure: this.backpressure } = socketContext(this.sockets, deps));
    this.door = new Door(this.ctx, reads, settings);
    this.users = new UserSockets(this.sockets, this.ctx);
    this.register();
  }

  private register(): void {
    const { config, metrics, guard } = this.ctx;
    const uws = loadUws();
    for (const app of this.apps)
      app.ws<Session>(CENTRIFUGE_WS_PATH, {
        compression: config.server.compression === "shared" ? uws.SHARED_COMPRESSOR : uws.DISABLED,
        maxPayloadLength: hardPayloadCap(config.server.maxPayloadBytes),
        maxBackpressure: config.backpressure.maxBytes,
        idleTimeout: config.server.idleTimeoutSec,
        sendPingsAutomatically: true,
        upgrade: (res, req, context) => {
          const key = req.getHeader("sec-websocket-key");
          const extensions = req.getHeader("sec-websocket-extensions");
          const protocols = req.getHeader("sec-websocket-protocol");
          const page = { origin: req.getHeader("origin"), host: req.getHeader("host") };
          const headers = hookHeaders(guard.access, req);
          const ip = Buffer.from(res.getRemoteAddressAsText()).toString();
          if (this.ctx.isDraining()) return writeUwsError(res, { status: 503, code: ErrorCode.ShuttingDown, message: "server is shutting down" });
          const refusal = guard.admission.reserve(ip, page);
          if (refusal) {
            const code = refusal.status === 403 ? ErrorCode.Forbidden : refusal.status === 429 ? ErrorCode.RateLimited : ErrorCode.ShuttingDown;
            return writeUwsError(res, {
              status: refusal.status,
              code,
              message: refusal.message,
              ...(refusal.retryAfterSec ? { retryAfterSec: refusal.retryAfterSec } : {}),
            });
          }
          // The SDKs' Protobuf builds offer `centrifuge-protobuf`; their JSON builds offer no subprotocol.
          const codec = protocols.split(",").some((p) => p.trim() === CENTRIFUGE_PROTOBUF_CODEC.subprotocol)
            ? CENTRIFUGE_PROTOBUF_CODEC
            : CENTRIFUGE_JSON_CODEC;
          const conn: Conn = { client: newClientId(), transport: "websocket", protocol: codec === CENTRIFUGE_JSON_CODEC ? "json" : "protobuf" };
          const session = this.door.session(newSession(anonymousIdentity(ip, conn), codec), headers);
          res.upgrade(session, key, codec === CENTRIFUGE_JSON_CODEC ? "" : codec.subprotocol, extensions, context);
        },
        open: (ws) => {
          if (config.server.compression !== "off") ws.getUserData().compress = true;
          this.sockets.add(ws);
          metrics.connections.inc();
          this.door.opened(ws);
        },
        message: (ws, message, isBinary) => {
          const s = ws.getUserData();
          if (this.door.connected(s) && !guard.frameAllowed(ws, () => endSocket(ws, Disconnect.TooManyRequests, "too many requests"))) return;
          if (message.byteLength > config.server.maxPayloadBytes) {
            metrics.badFrames.labels("message_too_big").inc();
            return endSocket(ws, CloseCode.MessageTooBig, `frame larger than ${config.server.maxPayloadBytes} bytes`);
          }
          const decoded = s.codec.decode(message, isBinary);
          if (!decoded.ok) {
            metrics.badFrames.labels(decoded.code).inc();
            return endSocket(ws, Disconnect.BadRequest, `bad request: ${decoded.message}`.slice(0, 120));
          }
          this.door.frame(ws, decoded.value as unknown[], decoded.mayNotFitJson);
        },
        drain: (ws) => this.backpressure.onDrain(ws),
        close: (ws, code, message) => {
          const s = ws.getUserData();
          s.closed = true;
          this.sockets.delete(ws);
          this.door.closed(ws, code, Buffer.from(message).toString("utf8"));
          releaseSession(this.ctx, ws);
          metrics.connections.dec();
        },
      });
  }

  /** Starts the backpressure sweep and the protocol's pings (after the listeners opened). */
  start(): void {
    this.backpressure.start();
    this.pinger = setInterval(() => this.door.ping(this.sockets), this.settings.pingIntervalMs);
    this.pinger.unref();
  }

  /** Closes every socket with 3001 shutdown: the SDKs reconnect (elsewhere) and recover. */
  closeAll(): void {
    this.backpressure.stop();
    clearInterval(this.pinger);
    this.users.endAll(CloseCode.GoingAway, "shutdown");
  }
}
