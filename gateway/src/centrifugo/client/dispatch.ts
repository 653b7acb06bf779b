import { connectionInfo, type Identity } from "../../auth/access.js";
import { AuthError } from "../../auth/errors.js";
import { HookDisconnect } from "../../backend/proxy-format.js";
import { brokerFailure, GatewayError } from "../../errors.js";
import { toGatewayChannel } from "../../protocol/centrifugo-channels.js";
import { ClientError, clientErrorOf, Disconnect } from "../../protocol/centrifuge/codes.js";
import { requestId, type Request } from "../../protocol/centrifuge/requests.js";
import type { CentrifugeCodec, Reply as ClientReply } from "../../protocol/centrifuge/shapes.js";
import { ErrorCode } from "../../protocol/codes.js";
import { PRESENCE_INFO_BYTES } from "../../protocol/frames.js";
import { handleFrame, type HandlerContext } from "../../ws/handlers.js";
import { clientIdOf, endSocket, sendEncoded, type Session, type Socket } from "../../ws/session.js";
import type { ServerApiDeps } from "../context.js";
import { history, presence, presenceStats } from "../reads.js";
import type { Reply } from "../codes.js";
import { readCommand, type Command, type SubscribeCommand } from "./commands.js";
import { planSubscribe } from "./recovery.js";
import { planServerSubs, serverSubResult } from "./server-subs.js";

/** The door's own settings (CENTRIFUGO_CLIENT_* in the server section). */
export type DoorSettings = {
  /** How often the server pings (an empty command); a client that has not answered the previous ping by then is closed (3012 no pong). */
  readonly pingIntervalMs: number;
  /** How long a socket may stay open without a `connect` (3502 stale). */
  readonly connectTimeoutMs: number;
};

type Phase = "waiting" | "connecting" | "connected";

/** Commands held behind a `connect` being checked (the SDKs send none before its reply); more close the connection (3501). */
export const MAX_QUEUED = 256;

/** What the door keeps per socket besides the shared session. */
type DoorState = {
  phase: Phase;
  /** Commands that came behind a `connect` still being checked: handled, in order, once it is. */
  queue: { raw: unknown; mayNotFitJson: boolean }[];
  /** The HOOK_HEADERS of the upgrade, for the connect hook. */
  headers: Record<string, string>;
  /** The client was pinged and has not answered yet. */
  awaitingPong: boolean;
  connectTimer?: NodeJS.Timeout;
  /** Subscribes and unsubscribes of the socket, in the order they came (a subscribe reads the stream first). */
  chain: Promise<void>;
};

/**
 * Each command of the Centrifuge client protocol, translated onto this gateway's services: connect runs the
 * authorization chain's first half (token, connect hook) as /ws's upgrade does; subscribe, unsubscribe,
 * publish, rpc and refresh become the native frames /ws handles (ws/handlers.ts), with ids that tell the
 * codec how to reply (protocol/centrifuge/requests.ts); history, presence and presence_stats are the server
 * API's reads (centrifugo/reads.ts) with the connection's identity.
 */
export class Door {
  constructor(
    private readonly ctx: HandlerContext,
    private readonly reads: ServerApiDeps,
    private readonly settings: DoorSettings,
  ) {}

  /** The session of a new socket, with the door's state in it (uWS hands a socket's user data back as a copy of what it was given: the state travels in it). */
  session(s: Session, headers: Record<string, string>): Session {
    const door: DoorState = { phase: "waiting", queue: [], headers, awaitingPong: false, chain: Promise.resolve() };
    return Object.assign(s, { door });
  }

  opened(ws: Socket): void {
    const st = this.stateOf(ws);
    st.connectTimer = setTimeout(() => {
      if (st.phase !== "connected" && !ws.getUserData().closed) endSocket(ws, Disconnect.Stale, "stale: no connect command");
    }, this.settings.connectTimeoutMs);
    st.connectTimer.unref();
  }

  connected(s: Session): boolean {
    return stateOf(s).phase === "connected";
  }

  closed(ws: Socket, code: number, reason: string): void {
    const s = ws.getUserData();
    const st = this.stateOf(ws);
    clearTimeout(st.connectTimer);
    if (st.phase !== "connected") return this.ctx.guard.admission.cancel(s.ip);
    this.ctx.guard.closed(ws);
    const closed = s.serverClose ? { by: "server" as const, ...s.serverClose } : { by: "client" as const, code, reason };
    this.ctx.events?.record("disconnect", { user: s.user, client: clientIdOf(ws), transport: "websocket", ...closed });
  }

  /** One tick of the protocol's pings: a socket that did not answer the last one is closed, every other pinged. */
  ping(sockets: Iterable<Socket>): void {
    for (const ws of sockets) {
      const s = ws.getUserData();
      const st = stateOf(s);
      if (s.closed || st.phase !== "connected") continue;
      if (st.awaitingPong) {
        endSocket(ws, Disconnect.NoPong, "no pong");
        continue;
      }
      st.awaitingPong = true;
      sendReply(ws, {});
    }
  }

  /** A frame's commands, in order. */
  frame(ws: Socket, commands: readonly unknown[], mayNotFitJson: boolean): void {
    const st = this.stateOf(ws);
    for (const raw of commands) {
      if (ws.getUserData().closed) return;
      if (st.phase !== "connecting") this.command(ws, st, raw, mayNotFitJson);
      else if (st.queue.length < MAX_QUEUED) st.queue.push({ raw, mayNotFitJson });
      else return endSocket(ws, Disconnect.BadRequest, `bad request: more than ${MAX_QUEUED} commands before the connect reply`);
    }
  }

  private stateOf(ws: Socket): DoorState {
    return stateOf(ws.getUserData());
  }

  private command(ws: Socket, st: DoorState, raw: unknown, mayNotFitJson: boolean): void {
    const c = readCommand(raw);
    if ("bad" in c) {
      this.ctx.metrics.badFrames.labels(ErrorCode.BadRequest).inc();
      if (c.id === undefined) return endSocket(ws, Disconnect.BadRequest, `bad request: ${c.bad}`.slice(0, 120));
      return this.replyError(ws, c.id, ClientError.BadRequest, c.bad);
    }
    if (st.phase === "waiting") {
      if (c.method !== "connect") return endSocket(ws, Disconnect.BadRequest, "bad request: the first command must be connect");
      st.phase = "connecting";
      return void this.connect(ws, st, c).catch((e: unknown) => {
        this.ctx.failures.warn("connect", { err: e }, "connect failed");
        endSocket(ws, Disconnect.ServerError, "internal server error");
      });
    }
    this.dispatch(ws, st, c, mayNotFitJson);
  }

  private dispatch(ws: Socket, st: DoorState, c: Command, mayNotFitJson: boolean): void {
    switch (c.method) {
      case "pong":
        st.awaitingPong = false;
        return;
      case "connect":
        return endSocket(ws, Disconnect.BadRequest, "bad request: already connected");
      case "subscribe":
      case "unsubscribe":
        // In order: a subscribe reads the stream's position before its native frame is handled.
        st.chain = st.chain
          .then(() => (c.method === "subscribe" ? this.subscribe(ws, c) : this.unsubscribe(ws, c)))
          .catch((e: unknown) => this.failed(ws, c.id, e));
        return;
      case "publish": {
        const channel = this.channel(ws, c.id, c.channel);
        if (channel === undefined) return;
        return this.native(ws, { kind: "publish", id: c.id }, { op: "pub", channel, data: c.data }, mayNotFitJson);
      }
      case "rpc":
        return this.native(ws, { kind: "rpc", id: c.id }, { op: "rpc", method: c.rpcMethod, data: c.data }, mayNotFitJson);
      case "refresh":
        return void this.refresh(ws, c).catch((e: unknown) => this.failed(ws, c.id, e));
      case "history":
      case "presence":
      case "presence_stats":
        return void this.read(ws, c.id, c.method, c.params).catch((e: unknown) => this.failed(ws, c.id, e));
      case "send":
        // Centrifugo answers an asynchronous message it has no handler for the same way.
        return endSocket(ws, Disconnect.NotAvailable, "not available: send has no handler here");
      case "sub_refresh": {
        const channel = this.channel(ws, c.id, c.channel);
        if (channel === undefined) return;
        return this.native(ws, { kind: "sub_refresh", id: c.id }, { op: "sub_refresh", channel, token: c.token }, false);
      }
    }
  }

  /** `connect`: the token and the connect hook (auth/access.ts `identify`), then the connection's reply and its pings. */
  private async connect(ws: Socket, st: DoorState, c: Extract<Command, { method: "connect" }>): Promise<void> {
    const s = ws.getUserData();
    let id: Identity;
    try {
      id = await this.ctx.guard.access.identify({
        transport: "websocket",
        ip: s.ip,
        token: c.token,
        headers: st.headers,
        ...(s.identity.conn ? { conn: s.identity.conn } : {}),
      });
    } catch (e) {
      if (s.closed) return;
      return this.connectRefused(ws, c.id, e);
    }
    if (s.closed) return;
    // Where each server-side subscription starts (a read of its stream's position), before the reply names them.
    const serverSubs = await planServerSubs(this.ctx.broker.replay, id.principal.perms.auto ?? [], c.subs);
    if (s.closed) return;
    if (this.ctx.isDraining()) return endSocket(ws, Disconnect.Shutdown, "shutdown");
    s.identity = id;
    // The session was made at the upgrade, before anyone was named: the connect names its user.
    (s as { user: string }).user = id.principal.user;
    clearTimeout(st.connectTimer);
    this.ctx.guard.opened(ws);
    st.phase = "connected";
    const exp = id.principal.exp;
    const ttl = exp !== undefined ? Math.max(0, Math.floor(exp - Date.now() / 1000)) : undefined;
    const result = {
      client: clientIdOf(ws),
      version: "",
      ...(ttl !== undefined ? { expires: true, ttl } : {}),
      ...(serverSubs.length > 0 ? { subs: Object.fromEntries(serverSubs.map((x) => [x.name, serverSubResult(x)])) } : {}),
      ping: Math.round(this.settings.pingIntervalMs / 1000),
      pong: true,
    };
    sendReply(ws, { id: c.id, connect: result });
    this.ctx.events?.record("connect", { user: s.user, client: clientIdOf(ws), transport: "websocket" });
    // Each a native `sub` with its start, as a client's subscribe: its publications come as pushes naming the channel.
    for (const x of serverSubs)
      this.native(ws, { kind: "server_sub", id: c.id }, { op: "sub", channel: x.pattern, ...(x.plan.from ? { from: x.plan.from } : {}) }, false);
    const queued = st.queue.splice(0);
    for (const q of queued) if (!s.closed) this.command(ws, st, q.raw, q.mayNotFitJson);
  }

  /**
   * A refused connect: a bad token closes with 3500 (the SDK stays away), an expired one is answered 109 (the
   * SDK gets a new token and reconnects), a hook's `disconnect` closes with its code, anything else is an
   * error reply (temporary ones make the SDK reconnect).
   */
  private connectRefused(ws: Socket, id: number, e: unknown): void {
    if (e instanceof HookDisconnect) return endSocket(ws, e.close.code, e.close.reason);
    if (e instanceof AuthError) {
      this.ctx.metrics.badFrames.labels(ErrorCode.Unauthorized).inc();
      if (e.reason === "expired") return this.replyError(ws, id, ClientError.TokenExpired, "token expired");
      return endSocket(ws, Disconnect.InvalidToken, `invalid token: ${e.message}`.slice(0, 120));
    }
    if (!(e instanceof GatewayError)) throw e;
    this.ctx.metrics.badFrames.labels(e.code).inc();
    sendReply(ws, { id, error: clientErrorOf(e.code, e.message, e.temporary) });
  }

  /**
   * `refresh`: as Centrifugo answers it, an expired token is answered 109 (the SDK asks for another) and an
   * invalid one closes with 3500; a valid one is /ws's `refresh` (same user, new claims and expiry).
   */
  private async refresh(ws: Socket, c: Extract<Command, { method: "refresh" }>): Promise<void> {
    const auth = this.ctx.guard.access.auth;
    if (auth.enabled) {
      try {
        await auth.verify(c.token);
      } catch (e) {
        if (!(e instanceof AuthError)) throw e;
        if (ws.getUserData().closed) return;
        this.ctx.metrics.badFrames.labels(ErrorCode.Unauthorized).inc();
        if (e.reason === "expired") return this.replyError(ws, c.id, ClientError.TokenExpired, "token expired");
        return endSocket(ws, Disconnect.InvalidToken, `invalid token: ${e.message}`.slice(0, 120));
      }
    }
    if (!ws.getUserData().closed) this.native(ws, { kind: "refresh", id: c.id }, { op: "refresh", token: c.token }, false);
  }

  /** `subscribe`: the plan (recovery.ts) from the stream's position, then the native `sub` with its start. */
  private async subscribe(ws: Socket, c: SubscribeCommand): Promise<void> {
    const s = ws.getUserData();
    const channel = this.channel(ws, c.id, c.channel);
    if (channel === undefined || s.closed) return;
    const replay = this.ctx.broker.replay;
    const positioned = c.recover || c.positioned || c.recoverable;
    let state;
    if (replay && positioned) {
      try {
        state = await replay.state(channel);
      } catch (e) {
        const f = brokerFailure(e, this.ctx.broker.isConnected(), "subscribe");
        return this.replyError(ws, c.id, clientErrorOf(f.code, f.message, f.temporary).code, f.message, f.temporary);
      }
    }
    const plan = planSubscribe(c, state);
    const presence = this.presenceOf(channel, c.joinLeave);
    const info = connectionInfo(s.identity);
    const frame = {
      op: "sub",
      channel,
      ...(plan.from ? { from: plan.from } : {}),
      ...(presence ? { presence } : {}),
      ...(presence && info !== undefined && fitsPresence(info) ? { info } : {}),
      ...(c.token !== undefined ? { token: c.token } : {}),
      // Fossil deltas through the hub's per-channel deltas (fanout/deltas.ts): the reply's `delta: true` says so.
      ...(c.delta ? { delta: "fossil" } : {}),
    };
    this.native(ws, { kind: "subscribe", id: c.id, mode: plan.mode, offset: plan.offset }, frame, false);
  }

  private unsubscribe(ws: Socket, c: Extract<Command, { method: "unsubscribe" }>): void {
    const channel = this.channel(ws, c.id, c.channel);
    if (channel === undefined) return;
    // Centrifugo answers an unsubscribe from a channel the client is not in as done: so does this door.
    if (!ws.getUserData().subs.has(channel)) return sendReply(ws, { id: c.id, unsubscribe: {} });
    this.native(ws, { kind: "unsubscribe", id: c.id }, { op: "unsub", channel }, false);
  }

  /**
   * Presence on this door: every subscriber of a channel whose namespace keeps presence is a member (as on
   * Centrifugo with `presence` on); one that asked for join and leave pushes (`join_leave`) also gets them.
   * None when the broker keeps no presence.
   */
  private presenceOf(channel: string, joinLeave: boolean): true | "member" | undefined {
    if (!this.ctx.presence) return undefined;
    const ns = this.ctx.guard.access.namespaces;
    const route = ns && !ns.empty ? ns.ofPattern(channel) : undefined;
    if (route?.kind === "namespace" && !route.ns.features.presence) return undefined;
    return joinLeave ? true : "member";
  }

  /** The native frame of a command, handled as /ws handles it; its reply comes back through the codec. */
  private native(ws: Socket, r: Request, frame: Record<string, unknown>, mayNotFitJson: boolean): void {
    try {
      handleFrame(this.ctx, ws, { ok: true, value: { ...frame, id: requestId(r) }, mayNotFitJson });
    } catch (e) {
      this.failed(ws, r.id, e);
    }
  }

  /** history, presence, presence_stats: the server API's reads, as this connection. */
  private async read(ws: Socket, id: number, method: "history" | "presence" | "presence_stats", params: Record<string, unknown>): Promise<void> {
    const s = ws.getUserData();
    const who = { identity: s.identity, knock: { transport: "websocket" as const, ip: s.ip, headers: {} }, local: false };
    const read = method === "history" ? history : method === "presence" ? presence : presenceStats;
    const reply: Reply = await read(this.reads, who, params);
    if (s.closed) return;
    if ("error" in reply) return this.replyError(ws, id, reply.error.code as ClientError, reply.error.message, reply.error.code === ClientError.Internal);
    sendReply(ws, { id, [method]: reply.result } as ClientReply);
  }

  /** The gateway channel of a Centrifugo name; undefined when it has none (answered 107: the name is malformed here). */
  private channel(ws: Socket, id: number, name: string): string | undefined {
    const m = toGatewayChannel(name);
    if (m.ok) return m.name;
    this.replyError(ws, id, ClientError.BadRequest, m.reason);
    return undefined;
  }

  private replyError(ws: Socket, id: number, code: ClientError, message: string, temporary = false): void {
    sendReply(ws, { id, error: { code, message, ...(temporary ? { temporary: true } : {}) } });
  }

  private failed(ws: Socket, id: number, e: unknown): void {
    this.ctx.failures.warn("centrifuge", { err: e }, "command failed");
    this.replyError(ws, id, ClientError.Internal, "internal server error", true);
  }
}

/** The door's state of a session of this door (made by `Door.session`). */
const stateOf = (s: Session): DoorState => (s as Session & { door: DoorState }).door;

/** A reply or push in the socket's format (its codec is one of the door's). */
const sendReply = (ws: Socket, r: ClientReply): void => sendEncoded(ws, (ws.getUserData().codec as CentrifugeCodec).reply(r));

const fitsPresence = (info: unknown): boolean => Buffer.byteLength(JSON.stringify(info)) <= PRESENCE_INFO_BYTES;
