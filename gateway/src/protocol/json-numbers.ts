/**
 * JSON numbers beyond a double's range: JSON.parse makes them Infinity, and JSON.stringify writes Infinity as
 * `null`, so a payload that is parsed and encoded again (a WebSocket `pub`, a batch item, a multi-line HTTP
 * body) would be stored changed. Such input is refused instead. Only text that may hold one (a number with a
 * three-digit positive exponent, or a run of 300 digits) is walked; other text costs one regex scan.
 */
const MAYBE_HUGE = /[eE]\+?0*[1-9]\d{2}|\d{300}/;

/** The message of the refusal, the same at every door. */
export const HUGE_NUMBER = "a number is beyond the range of a double (it would be stored as null)";

/** True when `value`, parsed from `text`, holds a number that JSON.parse made infinite. */
export function hasHugeNumber(text: string, value: unknown): boolean {
  return mayHoldHugeNumber(text) && hasInfinite(value);
}

/** Whether JSON `text` may hold a number beyond a double's range (only then is its value walked). */
export const mayHoldHugeNumber = (text: string): boolean => MAYBE_HUGE.test(text);

/** True when `value` holds a number that is not finite (walked without recursion: any depth). */
export function hasInfinite(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "number") {
      if (!Number.isFinite(v)) return true;
    } else if (typeof v === "object" && v !== null) {
      for (const x of Array.isArray(v) ? v : Object.values(v)) stack.push(x);
    }
  }
  return false;
}
