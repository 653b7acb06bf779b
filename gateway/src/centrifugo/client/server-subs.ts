import type { Broker } from "../../broker/broker.js";
import { clientChannel, type SubscribeResult } from "../../protocol/centrifuge/shapes.js";
import type { Position } from "./commands.js";
import { planSubscribe, type SubscribePlan } from "./recovery.js";

/** One server-side subscription of a connection: its channel here, its Centrifugo name, and where it starts. */
export type ServerSub = { pattern: string; name: string; plan: SubscribePlan; epoch?: string };

/**
 * The server-side subscriptions of a connecting client (the token's `channels` and `subs`, or
 * `channels.auto`: `perms.auto`), each planned as a subscribe of this door that is recoverable and
 * positioned: from the position the client's `connect` names for it (`subs`, after a reconnect), as
 * `subscribe` recovers, else live after the stream's top. Without history (no JetStream) each is live.
 */
export async function planServerSubs(
  replay: Broker["replay"],
  patterns: readonly string[],
  positions: Readonly<Record<string, Position>>,
): Promise<ServerSub[]> {
  return Promise.all(
    patterns.map(async (pattern) => {
      const name = clientChannel(pattern);
      const state = replay ? await replay.state(pattern) : undefined;
      const at = Object.hasOwn(positions, name) ? positions[name] : undefined;
      const plan = planSubscribe({ recover: false, offset: 0, epoch: "", ...at, positioned: true, recoverable: true }, state);
      return { pattern, name, plan, ...(state ? { epoch: state.epoch } : {}) };
    }),
  );
}

/** A server-side subscription's entry in the connect reply's `subs` (the subscribe reply's fields). */
export function serverSubResult(s: ServerSub): SubscribeResult {
  if (s.plan.mode === "live" || s.epoch === undefined) return {};
  return {
    recoverable: true,
    positioned: true,
    epoch: s.epoch,
    offset: s.plan.offset,
    ...(s.plan.mode === "recovered" || s.plan.mode === "unrecovered" ? { was_recovering: true } : {}),
    ...(s.plan.mode === "recovered" ? { recovered: true } : {}),
  };
}
