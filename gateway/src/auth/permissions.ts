import { checkPattern, matches } from "../protocol/channel.js";

/** Channel permissions of a principal: NATS-style patterns it may subscribe to and publish to. */
export type Permissions = {
  readonly sub: readonly string[];
  readonly pub: readonly string[];
  /** Server-side subscriptions (`channels.auto`): patterns the connection is subscribed to at connect. */
  readonly auto?: readonly string[];
  /**
   * RPC methods it may call (the token's `rpc` claim, the connect hook's `rpc`): patterns as channels have
   * them (`orders.*`, `admin.>`). Absent: none.
   */
  readonly rpc?: readonly string[];
};

/** Most server-side subscriptions a token may list. */
export const MAX_AUTO_CHANNELS = 100;

/** Everything allowed: the permissions of every connection when authentication is off. */
export const ALLOW_ALL: Permissions = Object.freeze({ sub: Object.freeze([">"]), pub: Object.freeze([">"]), rpc: Object.freeze([">"]) });

/** No rights at all (a token without a `channels` claim). */
export const DENY_ALL: Permissions = Object.freeze({ sub: Object.freeze([]), pub: Object.freeze([]) });

/**
 * Whether every channel matched by `pattern` is also matched by `perm` (pattern ⊆ perm), both valid
 * patterns. `orders.*` covers `orders.eu` but not `orders.>`; `orders.>` covers `orders.*` and `orders.eu.x`.
 * Exact: property-tested against `matches()`.
 */
export function patternCovers(perm: string, pattern: string): boolean {
  const p = perm.split(".");
  const q = pattern.split(".");
  for (const [i, t] of p.entries()) {
    // `>` takes one or more tokens: anything q still has (at least one token) is covered.
    if (t === ">") return q.length > i;
    const u = q[i];
    if (u === undefined) return false;
    // q's `>` reaches arbitrarily long channels; a fixed-length prefix of perm cannot cover them all.
    if (u === ">") return false;
    if (t === "*") continue;
    if (u !== t) return false; // a literal in perm covers only the same literal (not `*`)
  }
  return q.length === p.length;
}

/** May subscribe to `pattern` (every channel it can match is allowed). */
export const canSubscribe = (perms: Permissions, pattern: string): boolean => perms.sub.some((p) => patternCovers(p, pattern));

/** May publish to the concrete `channel`. */
export const canPublish = (perms: Permissions, channel: string): boolean => perms.pub.some((p) => matches(p, channel));

/** May call the RPC method `method`. */
export const canCall = (perms: Permissions, method: string): boolean => (perms.rpc ?? []).some((p) => matches(p, method));

/** Most method patterns an `rpc` claim may list. */
export const MAX_RPC_PATTERNS = 1_000;

/**
 * Reads the `rpc` claim (a token's, or a connect hook answer's): a list of method patterns. Missing means
 * no method; anything malformed is an error message, and the token (or answer) is refused.
 */
export function parseRpcClaim(claim: unknown): readonly string[] | string {
  if (claim === undefined) return Object.freeze([]);
  if (!Array.isArray(claim) || claim.length > MAX_RPC_PATTERNS) return `rpc must be a list of at most ${MAX_RPC_PATTERNS} method patterns`;
  for (const p of claim) {
    const ok = checkPattern(p);
    if (!ok.ok) return `rpc has a bad method pattern ${JSON.stringify(p)?.slice(0, 80)}: ${ok.reason.replace(/^channel\b/, "the name")}`;
  }
  return Object.freeze([...new Set(claim as string[])]);
}

/**
 * Reads the `channels` claim: `{"sub":[patterns],"pub":[patterns]}`. Missing means no rights; anything
 * malformed (not a list of valid patterns) is an error message, and the token is refused.
 */
export function parseChannelsClaim(claim: unknown): Permissions | string {
  if (claim === undefined) return DENY_ALL;
  if (typeof claim !== "object" || claim === null || Array.isArray(claim)) return 'channels claim must be an object {"sub":[...],"pub":[...]}';
  const c = claim as Record<string, unknown>;
  const out: { sub: string[]; pub: string[] } = { sub: [], pub: [] };
  for (const key of ["sub", "pub"] as const) {
    const v = c[key];
    if (v === undefined) continue;
    if (!Array.isArray(v) || v.length > 1_000) return `channels.${key} must be a list of at most 1000 patterns`;
    for (const p of v) {
      const ok = checkPattern(p);
      if (!ok.ok) return `channels.${key} has a bad pattern ${JSON.stringify(p)?.slice(0, 80)}: ${ok.reason}`;
      out[key].push(p as string);
    }
  }
  const perms = { sub: Object.freeze(out.sub), pub: Object.freeze(out.pub) };
  if (c.auto === undefined) return Object.freeze(perms);
  const auto = parseAutoChannels(c.auto, perms);
  return typeof auto === "string" ? auto : Object.freeze({ ...perms, auto });
}

/**
 * `channels.auto`: a list of patterns, each within the sub permissions (a server-side subscription is a
 * subscription: it needs the right). An error message, or the frozen list without duplicates.
 */
export function parseAutoChannels(v: unknown, perms: Permissions): readonly string[] | string {
  if (!Array.isArray(v) || v.length > MAX_AUTO_CHANNELS) return `channels.auto must be a list of at most ${MAX_AUTO_CHANNELS} patterns`;
  for (const p of v) {
    const ok = checkPattern(p);
    if (!ok.ok) return `channels.auto has a bad pattern ${JSON.stringify(p)?.slice(0, 80)}: ${ok.reason}`;
    if (!canSubscribe(perms, p as string)) return `channels.auto lists ${p as string}, which channels.sub does not allow`;
  }
  return Object.freeze([...new Set(v as string[])]);
}
