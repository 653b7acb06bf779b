import type { Frame, PresenceEvent, PresenceList, PresenceMember } from "./types.js";

/** The `join` or `leave` frame as the event `onPresence` gets. */
export function presenceEvent(f: Frame): PresenceEvent {
  const e: PresenceEvent = {
    type: f.op as "join" | "leave",
    channel: String(f.channel),
    client: String(f.client),
    user: typeof f.user === "string" ? f.user : null,
  };
  if (f.info !== undefined) e.info = f.info;
  return e;
}

/** The `presence` reply as a members list. */
export function presenceList(r: Frame): PresenceList {
  return { members: r.members as PresenceMember[], truncated: r.truncated === true };
}
