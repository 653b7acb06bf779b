/** Levenshtein distance (insertions, deletions, substitutions). */
export function distance(a: string, b: string): number {
  // One row of the table at a time; `left` is the cell just computed, `diag` the one above it to the left.
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  let last = b.length;
  for (let i = 1; i <= a.length; i++) {
    let left = i;
    let diag = i - 1;
    const cur = [left];
    for (const [k, up] of prev.slice(1).entries()) {
      left = Math.min(up + 1, left + 1, diag + (a[i - 1] === b[k] ? 0 : 1));
      diag = up;
      cur.push(left);
    }
    prev = cur;
    last = left;
  }
  return last;
}
