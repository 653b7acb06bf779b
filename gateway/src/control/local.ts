import { patternCovers } from "../auth/permissions.js";
import type { FanoutHub } from "../fanout/hub.js";
import { matches } from "../protocol/channel.js";
import { CloseCode, ErrorCode } from "../protocol/codes.js";
import type { SseEndpoint } from "../sse/endpoint.js";
import type { UserSocketDoor } from "../ws/user-sockets.js";
import { OCCUPANCY_MAX_PATTERNS, PART_MAX_BYTES, USER_MAX_CONNECTIONS, type WorkerPart, type WorkerRequest } from "./ops.js";

/**
 * One worker's part of each control operation, done on its own connections. It holds no state: the
 * WebSocket endpoint owns the sockets and their subscriptions, the SSE endpoint its streams, the hub the
 * count of subscribers per pattern; this asks them.
 */
export class LocalControl {
  /** Every WebSocket door's sockets: /ws's, and those a door added (the Centrifuge door's). */
  private readonly doors: UserSocketDoor[];

  constructor(
    ws: UserSocketDoor,
    private readonly sse: SseEndpoint,
    private readonly hub: FanoutHub,
  ) {
    this.doors = [ws];
  }

  /** Another door's WebSockets, reached by disconnect, unsubscribe and user as /ws's are. */
  addDoor(door: UserSocketDoor): void {
    this.doors.push(door);
  }

  run(req: WorkerRequest): WorkerPart | Promise<WorkerPart> {
    switch (req.op) {
      case "subscribe":
        return this.subscribe(req);
      case "disconnect": {
        const code = req.reconnect ? CloseCode.DisconnectedReconnect : CloseCode.DisconnectedFinal;
        const websocket = sum(this.doors, (d) => d.disconnectUser(req.user, code, req.reason));
        const sse = this.sse.endUser(req.user, { code: ErrorCode.Disconnected, message: req.reason, temporary: req.reconnect });
        return { op: "disconnect", websocket, sse };
      }
      case "unsubscribe": {
        const websocket = sum(this.doors, (d) => d.unsubscribeUser(req.user, req.channel, req.reason, patternCovers));
        const sse = this.sse.endUser(
          req.user,
          { code: ErrorCode.Unsubscribed, message: `${req.reason}: ${req.channel}`, temporary: false },
          req.channel,
          patternCovers,
        );
        return { op: "unsubscribe", websocket, sse };
      }
      case "occupancy":
        return this.occupancy("channel" in req ? receives(req.channel) : within(req.pattern));
      case "user": {
        const connections = [
          ...this.doors.flatMap((d) => d.connectionsOf(req.user)),
          ...this.sse
            .streamsOf(req.user)
            .map((s) => ({ transport: "sse" as const, id: s.id, ip: s.ip, subscriptions: [{ channel: s.channel, state: s.state }] })),
        ];
        // Bounded by count and by size: the part travels as one NATS message (1 MB by default).
        const listed: typeof connections = [];
        let bytes = 0;
        for (const c of connections) {
          bytes += 64 + c.ip.length + c.subscriptions.reduce((n, x) => n + 48 + x.channel.length, 0);
          if (listed.length >= USER_MAX_CONNECTIONS || bytes > PART_MAX_BYTES) break;
          listed.push(c);
        }
        return { op: "user", connections: listed, truncated: listed.length < connections.length };
      }
    }
  }

  /** A server subscribe on every door's sockets of the user; SSE streams (one channel each) get none. */
  private async subscribe(req: Extract<WorkerRequest, { op: "subscribe" }>): Promise<WorkerPart> {
    const { user, client, channel, from, info } = req;
    const r = { channel, ...(from ? { from } : {}), ...(info !== undefined ? { info } : {}) };
    const parts = await Promise.all(this.doors.map((d) => d.subscribeUser(user, client, r)));
    const refusal = parts.find((p) => p.refusal)?.refusal;
    return { op: "subscribe", websocket: sum(parts, (p) => p.subscribed), refused: sum(parts, (p) => p.refused), ...(refusal ? { refusal } : {}) };
  }

  /** Subscribers of every local pattern `wanted` selects (one pass over the hub's feeds). */
  private occupancy(wanted: (pattern: string) => boolean): WorkerPart {
    let subscribers = 0;
    let listed = 0;
    let bytes = 0;
    let truncated = false;
    const patterns: Record<string, number> = {};
    for (const [p, n] of this.hub.occupancy()) {
      if (!wanted(p)) continue;
      subscribers += n;
      bytes += p.length + 12;
      if (listed < OCCUPANCY_MAX_PATTERNS && bytes <= PART_MAX_BYTES) {
        patterns[p] = n;
        listed++;
      } else truncated = true;
    }
    return { op: "occupancy", subscribers, patterns, truncated };
  }
}

const sum = <T>(xs: readonly T[], f: (x: T) => number): number => xs.reduce((n, x) => n + f(x), 0);

const hasWildcard = (p: string): boolean => p.includes("*") || p.endsWith(">");

/** Subscriptions that receive `channel`: the channel's own, and the wildcards matching it (split only those). */
const receives =
  (channel: string) =>
  (p: string): boolean =>
    p === channel || (hasWildcard(p) && matches(p, channel));

/** Subscriptions inside `pattern`; the literal head before its first wildcard rules most out without a split. */
function within(pattern: string): (p: string) => boolean {
  if (!hasWildcard(pattern)) return (p) => p === pattern;
  const head = pattern.slice(0, Math.min(...["*", ">"].map((w) => pattern.indexOf(w)).filter((i) => i >= 0)));
  return (p) => p.startsWith(head) && patternCovers(pattern, p);
}
