import { toGatewayChannel } from "../protocol/centrifugo-channels.js";
import { MAX_AUTO_CHANNELS, parseChannelsClaim, type Permissions } from "./permissions.js";

/**
 * The claims a Centrifugo backend puts in its connection tokens, read beside this gateway's own (AUTH.md
 * "Centrifugo's claims"). Pure.
 *
 * - `channels` as a list of Centrifugo channel names (Centrifugo's server-side subscriptions), and the keys of
 *   `subs` (the same with options per channel): each name mapped to its channel here
 *   (protocol/centrifugo-channels.ts), the connection subscribed to it at connect (`auto`) and allowed to read
 *   it. `channels` as an object is this gateway's permission claim, as ever; `subs` adds to it.
 * - `expire_at` (unix seconds) replaces `exp` as the end of the connection's life (the token itself is still
 *   checked against `exp`); `0`: the connection does not expire.
 */
export type CentrifugoClaims = { channels?: unknown; subs?: unknown; expire_at?: unknown };

/** The permissions of a token's `channels` and `subs` claims, or why the token is refused. */
export function permissionsOf(c: CentrifugoClaims): Permissions | string {
  const list = Array.isArray(c.channels);
  const perms = list ? parseChannelsClaim(undefined) : parseChannelsClaim(c.channels);
  if (typeof perms === "string") return perms;
  if (c.subs !== undefined && (typeof c.subs !== "object" || c.subs === null || Array.isArray(c.subs)))
    return "subs must be an object with a Centrifugo channel name per key";
  const names = [...(list ? (c.channels as unknown[]) : []), ...Object.keys((c.subs ?? {}) as object)];
  if (names.length === 0) return perms;
  if (names.length > MAX_AUTO_CHANNELS) return `channels and subs name at most ${MAX_AUTO_CHANNELS} server-side channels together`;
  const auto: string[] = [];
  for (const n of names) {
    if (typeof n !== "string") return "channels must be a list of Centrifugo channel names (strings) or this gateway's {sub, pub} object";
    const m = toGatewayChannel(n);
    if (!m.ok) return `server-side channel ${JSON.stringify(n).slice(0, 80)}: ${m.reason}`;
    auto.push(m.name);
  }
  const all = Object.freeze([...new Set([...(perms.auto ?? []), ...auto])]);
  return Object.freeze({ ...perms, sub: Object.freeze([...new Set([...perms.sub, ...auto])]), auto: all });
}

/**
 * The end of the connection's life (unix seconds; undefined: none): `expire_at` when the token has it (`0`:
 * none), else `exp`. An `expire_at` that is not a whole number of seconds ≥ 0 is an error message.
 */
export function lifeOf(exp: number | undefined, expireAt: unknown): number | undefined | string {
  if (expireAt === undefined) return exp;
  if (!Number.isSafeInteger(expireAt) || (expireAt as number) < 0) return "expire_at must be a whole number of seconds since the epoch (0: never)";
  return expireAt === 0 ? undefined : (expireAt as number);
}
