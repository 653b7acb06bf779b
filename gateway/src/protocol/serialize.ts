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
