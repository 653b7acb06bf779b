import type { ErrorCode } from "./codes.js";
import type { Id } from "./frames.js";

/**
 * Server frames. `msg` frames are built once per message per worker from byte slices: the stored payload is
 * spliced in as-is (it was validated as JSON when published through the gateway), never parsed again.
 */
const SUFFIX = Buffer.from("}");
const TEXT_OPEN = Buffer.from('"enc":"text","data":');

export type MsgMeta = { channel: string; pattern: string; seq: number; ts: number; extra?: string };

/** `{"op":"msg","channel":…,"sub":…,"seq":` for the last (channel, pattern) seen: most feeds repeat them. */
let cachedKey = "";
let cachedPrefix = "";
function framePrefix(channel: string, pattern: string): string {
  const key = `${channel}\u0000${pattern}`;
  if (key !== cachedKey) {
    cachedKey = key;
    cachedPrefix = `{"op":"msg","channel":${JSON.stringify(channel)},"sub":${JSON.stringify(pattern)},"seq":`;
  }
  return cachedPrefix;
}

export function msgFrame(meta: MsgMeta, payload: Uint8Array): Buffer {
  const head = `${framePrefix(meta.channel, meta.pattern)}${meta.seq},"ts":${meta.ts}${meta.extra ?? ""},`;
  if (looksLikeJson(payload)) {
    // One allocation: head, payload bytes, closing brace.
    const start = `${head}"data":`;
    const headLen = Buffer.byteLength(start);
    const out = Buffer.allocUnsafe(headLen + payload.length + 1);
    out.write(start, 0);
    out.set(payload, headLen);
    out[headLen + payload.length] = 0x7d;
    return out;
  }
  // A payload put into the stream by something other than the gateway and not JSON: delivered as a string.
  return Buffer.concat([Buffer.from(head), TEXT_OPEN, Buffer.from(JSON.stringify(Buffer.from(payload).toString("utf8"))), SUFFIX]);
}

/**
 * Builds `msg` frames one at a time into one reusable buffer, for a writer that hands each frame to uWS
 * (which copies it) before building the next: a per-socket replay writes many frames in a row, and this
 * saves an allocation and the number-to-string conversions per frame there (the digits are written
 * straight into the buffer). Frames are byte-identical to `msgFrame`'s.
 */
export class FrameScratch {
  private buf = Buffer.allocUnsafe(16_384);
  private channel = "";
  private pattern = "";
  private prefix = Buffer.alloc(0);

  frame(channel: string, pattern: string, seq: number, ts: number, payload: Uint8Array): Uint8Array {
    // Millisecond timestamps with at most three decimals (the broker's µs) are written digit by digit;
    // anything else (never seen from the brokers) goes the string way.
    const us = Math.round(ts * 1_000);
    if (!looksLikeJson(payload) || us / 1_000 !== ts || !Number.isSafeInteger(seq) || us < 0 || !Number.isSafeInteger(us)) {
      return msgFrame({ channel, pattern, seq, ts }, payload);
    }
    if (channel !== this.channel || pattern !== this.pattern) {
      this.channel = channel;
      this.pattern = pattern;
      this.prefix = Buffer.from(framePrefix(channel, pattern));
    }
    // The prefix, at most 16 + 6 + 20 + 8 ASCII bytes of numbers and keys, the payload, the closing brace.
    const need = this.prefix.length + 64 + payload.length;
    if (need > this.buf.length) this.buf = Buffer.allocUnsafe(Math.max(need, this.buf.length * 2));
    const b = this.buf;
    b.set(this.prefix, 0);
    let o = writeUint(b, this.prefix.length, seq);
    o = writeAscii(b, o, TS_KEY);
    const ms = Math.floor(us / 1_000);
    o = writeUint(b, o, ms);
    let frac = us - ms * 1_000;
    if (frac !== 0) {
      b[o++] = 0x2e; // .
      let digits = 3;
      while (frac % 10 === 0) {
        frac /= 10;
        digits--;
      }
      for (let i = digits - 1; i >= 0; i--) {
        b[o + i] = 0x30 + (frac % 10);
        frac = Math.floor(frac / 10);
      }
      o += digits;
    }
    o = writeAscii(b, o, DATA_KEY);
    b.set(payload, o);
    o += payload.length;
    b[o++] = 0x7d;
    return b.subarray(0, o);
  }
}

const TS_KEY = ',"ts":';
const DATA_KEY = ',"data":';

function writeAscii(b: Buffer, o: number, s: string): number {
  for (let i = 0; i < s.length; i++) b[o + i] = s.charCodeAt(i);
  return o + s.length;
}

/** Writes a non-negative safe integer in decimal at `o`; returns the offset after it. */
function writeUint(b: Buffer, o: number, v: number): number {
  let len = 1;
  for (let x = v; x >= 10; x = Math.floor(x / 10)) len++;
  for (let i = o + len - 1; i >= o; i--) {
    const q = Math.floor(v / 10);
    b[i] = 0x30 + (v - q * 10);
    v = q;
  }
  return o + len;
}

/** Cheap check on the first and last bytes; a full parse only for scalars (numbers, true, false, null). */
export function looksLikeJson(p: Uint8Array): boolean {
  if (p.length === 0) return false;
  const first = p[0]!;
  const last = p[p.length - 1]!;
  if (first === 0x7b) return last === 0x7d; // { }
  if (first === 0x5b) return last === 0x5d; // [ ]
  if (first === 0x22) return last === 0x22 && p.length > 1; // " "
  if (p.length > 32) return false;
  try {
    JSON.parse(Buffer.from(p).toString("utf8"));
    return true;
  } catch {
    return false;
  }
}

const idPart = (id: Id | undefined): string => (id === undefined ? "" : `,"id":${JSON.stringify(id)}`);

export const okFrame = (id: Id | undefined, extra?: Record<string, unknown>): string => {
  let s = `{"op":"ok"${idPart(id)}`;
  if (extra) for (const [k, v] of Object.entries(extra)) if (v !== undefined) s += `,${JSON.stringify(k)}:${JSON.stringify(v)}`;
  return `${s}}`;
};

export const errFrame = (id: Id | undefined, code: ErrorCode, message: string): string =>
  `{"op":"err"${idPart(id)},"code":${JSON.stringify(code)},"message":${JSON.stringify(message)}}`;

export const pongFrame = (id: Id | undefined): string => `{"op":"pong"${idPart(id)}}`;
