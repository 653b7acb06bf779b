import type { CloseCode } from "../protocol/codes.js";
import type { HandlerContext } from "./context.js";
import { serverSubscribe, type ServerSubscribeRequest } from "./server-subscribe.js";
import { clientIdOf, endSocket, sendFrame, type Socket } from "./session.js";

/** One connection as the control plane lists it (`GET /v1/server/users/{user}`). */
export type ConnectionInfo = {
  transport: "websocket" | "sse";
  /** Unique within its worker. */
  id: number;
  ip: string;
  subscriptions: { channel: string; state: string; durable?: boolean; auto?: boolean }[];
};

/** What the control plane does to one door's WebSockets (/ws, the Centrifuge door): each door owns its sockets. */
export interface UserSocketDoor {
  /** Closes every socket of `user` with `code` (4012 reconnect, 4403 do not); how many. */
  disconnectUser(user: string, code: CloseCode, reason: string): number;
  /** Ends every subscription of `user` within `within`, each announced with an `unsub` frame; how many. */
  unsubscribeUser(user: string, within: string, reason: string, covers: (outer: string, inner: string) => boolean): number;
  /** Subscribes every socket of `user` (or its one `client`) as the server asks; how many, and how many refused with the first refusal. */
  subscribeUser(user: string, client: string | undefined, r: ServerSubscribeRequest): Promise<ServerSubscribed>;
  /** The sockets of `user` and their subscriptions. */
  connectionsOf(user: string): ConnectionInfo[];
}

/** What a server subscribe did on one door's sockets. */
export type ServerSubscribed = { subscribed: number; refused: number; refusal?: { code: string; message: string } };

/** A close reason is at most 123 bytes (RFC 6455): longer ones are cut on a character boundary. */
export function closeReason(reason: string): string {
  let r = reason;
  while (Buffer.byteLength(r) > 123) r = r.slice(0, -1);
  return r;
}

/**
 * The control plane's operations on a set of sockets and their subscriptions: the one implementation both
 * WebSocket doors use. Each socket's codec writes the `unsub` frame and maps the close code for its protocol.
 */
export class UserSockets implements UserSocketDoor {
  constructor(
    private readonly sockets: ReadonlySet<Socket>,
    private readonly ctx: HandlerContext,
  ) {}

  /** The open sockets of `user` (a scan: the control plane's requests are rare). */
  private socketsOf(user: string): Socket[] {
    const out: Socket[] = [];
    for (const ws of this.sockets) {
      const s = ws.getUserData();
      if (!s.closed && s.user === user) out.push(ws);
    }
    return out;
  }

  disconnectUser(user: string, code: CloseCode, reason: string): number {
    const found = this.socketsOf(user);
    for (const ws of found) endSocket(ws, code, closeReason(reason));
    return found.length;
  }

  unsubscribeUser(user: string, within: string, reason: string, covers: (outer: string, inner: string) => boolean): number {
    let n = 0;
    for (const ws of this.socketsOf(user)) {
      for (const sub of [...ws.getUserData().subs.values()]) {
        if (!covers(within, sub.pattern)) continue;
        this.ctx.subs.end(ws, sub);
        sendFrame(ws, { op: "unsub", channel: sub.pattern, reason });
        n++;
      }
    }
    return n;
  }

  async subscribeUser(user: string, client: string | undefined, r: ServerSubscribeRequest): Promise<ServerSubscribed> {
    const found = this.socketsOf(user).filter((ws) => client === undefined || clientIdOf(ws) === client);
    const out: ServerSubscribed = { subscribed: 0, refused: 0 };
    for (const done of await Promise.all(found.map((ws) => serverSubscribe(this.ctx, ws, r)))) {
      if (done === true) out.subscribed++;
      else if (done !== false) {
        out.refused++;
        out.refusal ??= { code: done.code, message: done.message };
      }
    }
    return out;
  }

  /** Closes every socket (each codec maps the code for its protocol), or with `holds` those holding a subscription to a pattern it accepts. */
  endAll(code: CloseCode, reason: string, holds?: (pattern: string) => boolean): void {
    for (const ws of [...this.sockets]) {
      const s = ws.getUserData();
      if (s.closed) continue;
      if (holds && ![...s.subs.keys()].some(holds)) continue;
      endSocket(ws, code, reason);
    }
  }

  connectionsOf(user: string): ConnectionInfo[] {
    return this.socketsOf(user).map((ws) => {
      const s = ws.getUserData();
      return {
        transport: "websocket",
        id: s.id,
        ip: s.ip,
        subscriptions: [...s.subs.values()].map((sub) => ({
          channel: sub.pattern,
          state: sub.life.phase,
          ...(sub.durable ? { durable: true } : {}),
          ...(sub.auto ? { auto: true } : {}),
        })),
      };
    });
  }
}
