// The gateway's MessagePack pre-scan (gateway/src/protocol/msgpack-bounds.ts), small for the browser bundle:
// only whether a frame passes. Both are held to gateway/conformance/vectors/msgpack-bounds.json.

/** The deepest server frame the SDK reads: the server's MessagePack encoder writes at most 100 levels. */
export const MAX_SERVER_FRAME_DEPTH = 100;

/** Bytes after the type byte of the fixed-size values 0xca-0xd8 (floats, ints, fixext with their type byte). */
const FIXED = [4, 8, 1, 2, 4, 8, 1, 2, 4, 8, 2, 3, 5, 9, 17];

/**
 * Whether `b` is exactly one MessagePack value that no decoder can make cost much more than its size, walked
 * without building anything: the elements declared and not yet read in all open arrays and maps never
 * exceed the bytes left (an element takes a byte at least, a map entry two), no str, bin or ext declares
 * more bytes than are left, and nesting stays within `maxDepth`. A hostile server (or a man in the middle on
 * ws://) could otherwise make the application's library allocate an array of each declared size.
 */
export function msgpackFits(b: Uint8Array, maxDepth = MAX_SERVER_FRAME_DEPTH): boolean {
  const end = b.length;
  const outer: number[] = [];
  let pos = 0;
  let left = 1;
  let pending = 1;
  for (;;) {
    if (left === 0) {
      if (outer.length === 0) return pos === end;
      left = outer.pop()!;
      continue;
    }
    if (pos >= end) return false;
    left--;
    pending--;
    const t = b[pos++]!;
    let n = -1;
    let len = 0;
    if (t < 0x80 || t >= 0xe0 || t === 0xc0 || t === 0xc2 || t === 0xc3) continue;
    if (t < 0x90) n = (t & 15) * 2;
    else if (t < 0xa0) n = t & 15;
    else if (t < 0xc0) len = t & 31;
    else if (t >= 0xca && t <= 0xd8) len = FIXED[t - 0xca]!;
    else if (t === 0xc1) return false;
    else {
      // bin 8/16/32 and ext 8/16/32 (0xc4-0xc9), str 8/16/32 (0xd9-0xdb): a 1, 2 or 4-byte length; array and
      // map 16/32 (0xdc-0xdf): a 2 or 4-byte count.
      const size = t >= 0xdc ? (t & 1 ? 4 : 2) : 1 << ((t - (t > 0xd0 ? 0xd9 : 0xc4)) % 3);
      if (pos + size > end) return false;
      let c = 0;
      for (let i = 0; i < size; i++) c = c * 256 + b[pos++]!;
      if (t < 0xdc) len = c + (t >= 0xc7 && t <= 0xc9 ? 1 : 0);
      else n = t >= 0xde ? c * 2 : c;
    }
    if (n < 0) {
      if (len > end - pos) return false;
      pos += len;
      continue;
    }
    if (outer.length >= maxDepth || pending + n > end - pos) return false;
    if (n > 0) {
      outer.push(left);
      left = n;
      pending += n;
    }
  }
}
