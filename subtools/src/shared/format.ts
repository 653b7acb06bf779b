// How both tools print latencies.

/** µs → "1.234ms" (µs resolution). */
export function ms3(us: number): string {
  return Number.isFinite(us) ? `${Number((us / 1000).toFixed(3))}ms` : "n/a";
}

/** µs → ms with ns resolution, for the exact means. */
export function ms6(us: number): string {
  return Number.isFinite(us) ? `${Number((us / 1000).toFixed(6))}ms` : "n/a";
}
