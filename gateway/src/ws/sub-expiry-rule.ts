/** setTimeout's longest delay; later expiries re-arm. */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * What set a subscription's end: the subscription token that granted it (moved by a `sub_refresh` frame with a
 * new token), or the subscribe hook's `exp` (moved by the sub_refresh hook when it falls due).
 */
export type ExpirySource = "token" | "hook";

/** A subscription's one expiry (`SubState.expiry`) and the one timer that acts on it (ws/sub-expiry.ts). */
export type SubExpiry = {
  readonly source: ExpirySource;
  /** Unix seconds, as the token or the hook gave it. */
  readonly exp: number;
  /** When it falls due (ms since the epoch): a token's `exp` plus the clock tolerance, the hook's `exp` as given. */
  readonly dueMs: number;
  timer?: NodeJS.Timeout;
};

/**
 * The expiry a subscription has after `source` gives `exp`, or undefined when `current` stays: one expiry per
 * subscription. A token's replaces any; the hook's replaces the hook's but never a token's (the subscription
 * stands on its token, which only a `sub_refresh` with a new token moves). The access chain does not ask the
 * subscribe hook when a `sub` carries a token, so today a subscription has one source from its start.
 */
export function nextExpiry(current: SubExpiry | undefined, source: ExpirySource, exp: number, clockToleranceSec: number): SubExpiry | undefined {
  if (current?.source === "token" && source === "hook") return undefined;
  const dueMs = (source === "token" ? exp + clockToleranceSec : exp) * 1000;
  return { source, exp, dueMs };
}

/** The timer's delay until `dueMs` from `nowMs`: never negative, at most setTimeout's longest (a later one re-arms). */
export function timerDelayMs(dueMs: number, nowMs: number): number {
  return Math.min(Math.max(dueMs - nowMs, 0), MAX_TIMER_MS);
}

/** Whether a `sub_refresh` frame may move the expiry: only a token's (a hook's is the sub_refresh hook's to move). */
export const refreshableByToken = (current: SubExpiry | undefined): boolean => current?.source === "token";
