import { compactToken, decodeToken, encodeToken } from "../util/key-tokens.js";

/**
 * What the cluster-wide events are about, as one key each (a KV key: tokens of `[-/_=A-Za-z0-9]`, dots
 * between): a channel's subscribers (`c.<channel>`, channel.occupied / channel.vacated) and an identified
 * user's presence in a channel (`u.<user>.<channel>`, presence.join / presence.leave). Channel and user
 * tokens are written as presence keys are (util/key-tokens.ts), so the key reads back exactly.
 *
 * A key is a subject of the state bucket (`$KV.<bucket>.s.<key>.<instance>`), and a subject must fit in
 * NATS's control line (4,096 bytes by default, with the reply subject and sizes). Read that way, a 256-
 * character user and a 255-character channel of 3-byte characters make a 4,600-character key: a key whose
 * readable form is longer than MAX_READABLE_KEY is written with compact tokens instead (util/key-tokens.ts:
 * `==` and base64url, at most about 2,100 characters for the longest valid names). Keys that fit stay as they
 * were, so a deployment's existing keys keep their names; only keys that could never be written change.
 */
export type SharedSubject = { kind: "channel"; channel: string } | { kind: "member"; channel: string; user: string };

/** The longest key written in the readable form (characters); longer ones are written compactly. */
export const MAX_READABLE_KEY = 3_072;

const bounded = (prefix: string, tokens: readonly string[]): string => {
  const readable = `${prefix}.${tokens.map(encodeToken).join(".")}`;
  return readable.length <= MAX_READABLE_KEY ? readable : `${prefix}.${tokens.map(compactToken).join(".")}`;
};

export const channelKey = (channel: string): string => bounded("c", channel.split("."));

export const memberKey = (user: string, channel: string): string => bounded("u", [user, ...channel.split(".")]);

/** The subject of a key written by channelKey or memberKey; undefined for anything else. */
export function subjectOfKey(key: string): SharedSubject | undefined {
  const [kind, first, ...rest] = key.split(".");
  if (first === undefined) return undefined;
  if (kind === "c") return { kind: "channel", channel: [first, ...rest].map(decodeToken).join(".") };
  if (kind === "u" && rest.length > 0) return { kind: "member", user: decodeToken(first), channel: rest.map(decodeToken).join(".") };
  return undefined;
}
