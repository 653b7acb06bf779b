import { MAX_FRAME_DEPTH } from "./depth.js";

/**
 * Why MessagePack bytes are refused before they are decoded: nested deeper than the cap (`depth`), or not
 * one whole MessagePack value (`malformed`: a header declaring more elements or bytes than are left, a
 * truncated value, the never-used byte 0xc1, bytes after the value).
 */
export type BoundsRefusal = { kind: "depth" | "malformed"; message: string };

/** The open containers' counts of values still to read, outermost first; grown to the deepest cap asked for. */
let outer = new Float64Array(MAX_FRAME_DEPTH + 1);

/**
 * Walks one MessagePack value in `b` without building anything, and refuses it when decoding it could cost
 * more than its size: every element an array or map header declares needs at least one byte (a map entry
 * two), so the elements declared and not yet read, in all open containers together, never exceed the bytes
 * left; a str, bin or ext never declares more bytes than are left; nesting stops at `maxDepth`. A decoder
 * that allocates an array of the declared size per header (as `@msgpack/msgpack` does) then allocates at
 * most about one slot per byte of the frame, however the headers are nested. Undefined when the bytes are
 * exactly one value within these bounds.
 */
export function msgpackBounds(b: Uint8Array, maxDepth: number = MAX_FRAME_DEPTH): BoundsRefusal | undefined {
  if (outer.length <= maxDepth) outer = new Float64Array(maxDepth + 1);
  const end = b.length;
  let pos = 0;
  let depth = 0;
  /** Values still to read in the innermost open container (at the top: the one value). */
  let left = 1;
  /** Values still to read in every open container. */
  let pending = 1;
  for (;;) {
    if (left === 0) {
      if (depth === 0) break;
      left = outer[--depth] ?? 0;
      continue;
    }
    if (pos >= end) return malformed(`truncated: ${pending} more value${pending === 1 ? "" : "s"} declared at byte ${pos}`);
    left--;
    pending--;
    const t = b[pos] ?? 0;
    if (t <= 0x7f || t >= 0xe0) {
      pos++; // fixint
      continue;
    }
    const at = pos;
    let n: number; // elements of a container
    if (t <= 0x9f) {
      n = t <= 0x8f ? (t & 0x0f) * 2 : t & 0x0f;
      pos++;
    } else if (t <= 0xbf) {
      const next = skip(b, pos + 1, t & 0x1f, "string");
      if (typeof next === "string") return malformed(next);
      pos = next;
      continue;
    } else {
      const c = CONTAINER[t - 0xc0] ?? 0;
      if (c === 0) {
        const s = scalar(b, pos, t);
        if (typeof s === "string") return malformed(s);
        pos = s;
        continue;
      }
      if (pos + 1 + c > end) return malformed(`truncated: a header at byte ${pos} is cut off`);
      n = readUint(b, pos + 1, c) * (t >= 0xde ? 2 : 1);
      pos += 1 + c;
    }
    // An empty array or map is a level too (as `[]` is in JSON).
    if (depth >= maxDepth) return { kind: "depth", message: `nests arrays and maps more than ${maxDepth} levels deep` };
    if (n === 0) continue;
    if (pending + n > end - pos) {
      const what = t <= 0x8f || t >= 0xde ? `a map of ${n / 2} entries` : `an array of ${n} elements`;
      return malformed(`${what} at byte ${at} declares more than the ${end - pos} bytes left can hold`);
    }
    outer[depth++] = left;
    left = n;
    pending += n;
  }
  return pos === end ? undefined : malformed(`${end - pos} bytes after the value`);
}

const malformed = (message: string): BoundsRefusal => ({ kind: "malformed", message });

/** For 0xc0-0xdf: the bytes of an array or map header's count (array 16/32, map 16/32), 0 for anything else. */
const CONTAINER = new Uint8Array(32);
CONTAINER[0xdc - 0xc0] = 2;
CONTAINER[0xdd - 0xc0] = 4;
CONTAINER[0xde - 0xc0] = 2;
CONTAINER[0xdf - 0xc0] = 4;

/** A big-endian unsigned integer of `size` (1, 2 or 4) bytes at `at`. */
function readUint(b: Uint8Array, at: number, size: number): number {
  let v = 0;
  for (let i = 0; i < size; i++) v = v * 256 + (b[at + i] ?? 0);
  return v;
}

/** The position after `len` bytes of a `what` at `at`, or why there are not that many. */
function skip(b: Uint8Array, at: number, len: number, what: string): number | string {
  const left = b.length - at;
  return len > left ? `a ${what} at byte ${at} declares ${len} bytes, more than the ${left} left` : at + len;
}

/** Fixed sizes of the scalars 0xc0-0xdf (header included), 0 for the variable and container ones. */
const FIXED = new Uint8Array(32);
for (const [t, size] of [
  [0xc0, 1], // nil
  [0xc2, 1], // false
  [0xc3, 1], // true
  [0xca, 5], // float 32
  [0xcb, 9], // float 64
  [0xcc, 2], // uint 8
  [0xcd, 3],
  [0xce, 5],
  [0xcf, 9],
  [0xd0, 2], // int 8
  [0xd1, 3],
  [0xd2, 5],
  [0xd3, 9],
  [0xd4, 3], // fixext 1: type and 1 byte
  [0xd5, 4],
  [0xd6, 6],
  [0xd7, 10],
  [0xd8, 18],
] as const)
  FIXED[t - 0xc0] = size;

/** For str 8/16/32, bin 8/16/32 and ext 8/16/32: the bytes of the length, and what it is. */
const VARIABLE: Record<number, readonly [number, string, number]> = {
  0xd9: [1, "string", 0],
  0xda: [2, "string", 0],
  0xdb: [4, "string", 0],
  0xc4: [1, "bin", 0],
  0xc5: [2, "bin", 0],
  0xc6: [4, "bin", 0],
  // An ext's type byte follows its length.
  0xc7: [1, "ext", 1],
  0xc8: [2, "ext", 1],
  0xc9: [4, "ext", 1],
};

/** The position after the scalar of type byte `t` at `pos`, or why it is refused. */
function scalar(b: Uint8Array, pos: number, t: number): number | string {
  const fixed = FIXED[t - 0xc0] ?? 0;
  if (fixed > 0) return pos + fixed <= b.length ? pos + fixed : `truncated: a value at byte ${pos} is cut off`;
  const v = VARIABLE[t];
  if (!v) return `byte 0x${t.toString(16)} at ${pos} starts no MessagePack value`;
  const [size, what, typeByte] = v;
  if (pos + 1 + size + typeByte > b.length) return `truncated: a ${what} header at byte ${pos} is cut off`;
  const len = readUint(b, pos + 1, size);
  return skip(b, pos + 1 + size + typeByte, len, what);
}
