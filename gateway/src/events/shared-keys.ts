import { decodeToken, encodeChannel, encodeToken } from "../broker/jetstream/presence-keys.js";

/**
 * What the cluster-wide events are about, as one key each (a KV key: tokens of `[-/_=A-Za-z0-9]`, dots
 * between): a channel's subscribers (`c.<channel>`, channel.occupied / channel.vacated) and an identified
 * user's presence in a channel (`u.<user>.<channel>`, presence.join / presence.leave). Channel and user
 * tokens are written as presence keys are (presence-keys.ts), so the key reads back exactly.
 */
export type SharedSubject = { kind: "channel"; channel: string } | { kind: "member"; channel: string; user: string };

export const channelKey = (channel: string): string => `c.${encodeChannel(channel)}`;

export const memberKey = (user: string, channel: string): string => `u.${encodeToken(user)}.${encodeChannel(channel)}`;

/** The subject of a key written by channelKey or memberKey; undefined for anything else. */
export function subjectOfKey(key: string): SharedSubject | undefined {
  const [kind, first, ...rest] = key.split(".");
  if (first === undefined) return undefined;
  if (kind === "c") return { kind: "channel", channel: [first, ...rest].map(decodeToken).join(".") };
  if (kind === "u" && rest.length > 0) return { kind: "member", user: decodeToken(first), channel: rest.map(decodeToken).join(".") };
  return undefined;
}
