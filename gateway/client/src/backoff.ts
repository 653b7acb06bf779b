/** Reconnect delay for attempt n (0-based): uniform in [0, min(maxMs, minMs·2^n)] ("full jitter"). */
export function backoffDelay(attempt: number, minMs: number, maxMs: number, random: () => number = Math.random): number {
  const cap = Math.min(maxMs, minMs * 2 ** Math.min(Math.max(attempt, 0), 52));
  return Math.min(cap, Math.floor(random() * (cap + 1)));
}
