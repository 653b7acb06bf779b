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

/** True when `value` (parsed from JSON text) holds a number that is not finite (walked without recursion: any depth). */
export const hasInfinite = (value: unknown): boolean => unfitForJson(value) === HUGE_NUMBER;

/** The refusal of a value JSON cannot hold that a binary codec can carry (bytes, a timestamp, an extension). */
export const NOT_JSON = "a value is not JSON (bytes, a timestamp or a MessagePack extension): it could not be stored as JSON";

/**
 * Why `value` cannot be stored as JSON as it is: a number that is not finite (HUGE_NUMBER), or a value other
 * than null, booleans, strings, numbers, plain arrays and plain objects (NOT_JSON); undefined when it can.
 * Walked without recursion: any depth.
 */
export function unfitForJson(value: unknown): string | undefined {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "number") {
      if (!Number.isFinite(v)) return HUGE_NUMBER;
    } else if (typeof v === "object" && v !== null) {
      const proto: unknown = Object.getPrototypeOf(v);
      if (!Array.isArray(v) && proto !== Object.prototype && proto !== null) return NOT_JSON;
      for (const x of Array.isArray(v) ? v : Object.values(v)) stack.push(x);
    } else if (typeof v === "bigint" || typeof v === "function" || typeof v === "symbol") return NOT_JSON;
  }
  return undefined;
}
