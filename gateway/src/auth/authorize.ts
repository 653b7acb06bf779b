import type { ClientFrame } from "../protocol/frames.js";
import { canPublish, canSubscribe } from "./permissions.js";
import type { Principal } from "./principal.js";

/**
 * Whether `p` may send frame `f`; a denial message, or undefined. `sub` needs a sub permission covering the
 * whole pattern — also with a start position (replay shows only what a live subscription would have) and
 * with a durable (the consumer is the user's own: its name is scoped by `sub`). `pub` needs a pub permission
 * matching the channel; `presence` (the member list) the sub right on the channel. unsub, ack/nak/term, ping and refresh act on the connection's own state only.
 */
export function authorizeFrame(p: Principal, f: ClientFrame): string | undefined {
  if (f.op === "sub" && !canSubscribe(p.perms, f.channel)) return `no permission to subscribe to ${f.channel}`;
  if (f.op === "presence" && !canSubscribe(p.perms, f.channel)) return `no permission to read the presence of ${f.channel}`;
  if (f.op === "pub" && !canPublish(p.perms, f.channel)) return `no permission to publish to ${f.channel}`;
  return undefined;
}
