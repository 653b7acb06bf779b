// Rounds: every bench that compares legs runs them in rounds, alternating their order so that a slow drift
// of a shared machine's speed favours none, discards warm-up rounds, and reports each round and the median.

/** The median of a list (the upper one of an even list); NaN for an empty list. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
}

/** The index of the median value (the lower one of an even list): the round whose tables a report shows. */
export function medianIndex(values: readonly number[]): number {
  if (values.length === 0) return -1;
  const order = values.map((v, i) => ({ v, i })).sort((a, b) => a.v - b.v);
  return order[Math.floor((order.length - 1) / 2)]!.i;
}

/** The legs in round r's order: as given in even rounds, reversed in odd ones. */
export const alternate = <T>(legs: readonly T[], round: number): T[] => (round % 2 === 0 ? [...legs] : [...legs].reverse());

/**
 * Runs `warmup` rounds and then `rounds` measured ones, in sequence; resolves with the measured rounds'
 * results. `round` counts from 0 over all of them (warm-up included), so alternation continues across.
 */
export async function runRounds<T>(opts: { rounds: number; warmup?: number }, body: (round: number) => Promise<T>): Promise<T[]> {
  const warmup = opts.warmup ?? 0;
  const measured: T[] = [];
  for (let r = 0; r < warmup + opts.rounds; r++) {
    const result = await body(r);
    if (r >= warmup) measured.push(result);
  }
  return measured;
}

/** Runs a leg `runs` times in a row and keeps the best result (highest by `score`). */
export async function bestOf<T>(runs: number, leg: () => Promise<T>, score: (t: T) => number): Promise<T> {
  let best: T | undefined;
  for (let i = 0; i < Math.max(1, runs); i++) {
    const t = await leg();
    if (best === undefined || score(t) > score(best)) best = t;
  }
  return best!;
}
