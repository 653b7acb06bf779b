import { isUtf8 } from "node:buffer";
import { isJsonBytes } from "./json-check.js";
import type { ErrorCode } from "./codes.js";
import { WIRE_ERRORS } from "../errors.js";
import type { Id } from "./frames.js";
import { serverTime, type MsgMeta, type ServerFrame, type StoredMsg } from "./server-frames.js";

export type { MsgMeta };

/**
 * The JSON encoding of every server frame (fanout.v1): the one place its bytes are written. `msg` frames are
 * built once per message per worker from byte slices: the stored payload is spliced in as-is (it was
 * validated as JSON when published through the gateway), never parsed again.
 */
const SUFFIX = Buffer.from("}");
const TEXT_OPEN = Buffer.from('"enc":"text","data":');
const BASE64_OPEN = Buffer.from('"enc":"base64","data":"');
const BASE64_CLOSE = Buffer.from('"}');

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
  const head = `${framePrefix(meta.channel, meta.pattern)}${meta.seq},"ts":${meta.ts}${meta.durable ? durableFields(meta.durable) : ""},`;
  // Bytes published with a content type: base64, the type named.
  if (meta.type !== undefined) return Buffer.from(`${head}${bytesFields(payload, meta.type)}}`);
  if (isJsonPayload(payload)) {
    // One allocation: head, payload bytes, closing brace.
    const start = `${head}"data":`;
    const headLen = Buffer.byteLength(start);
    const out = Buffer.allocUnsafe(headLen + payload.length + 1);
    out.write(start, 0);
    out.set(payload, headLen);
    out[headLen + payload.length] = 0x7d;
    return out;
  }
  // A payload put into the stream by something other than the gateway and not JSON: delivered as a string,
  // or as base64 when it is not UTF-8 either (a text frame must be valid UTF-8).
  const bytes = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  if (isUtf8(bytes)) return Buffer.concat([Buffer.from(head), TEXT_OPEN, Buffer.from(JSON.stringify(bytes.toString("utf8"))), SUFFIX]);
  return Buffer.concat([Buffer.from(head), BASE64_OPEN, Buffer.from(bytes.toString("base64")), BASE64_CLOSE]);
}

/**
 * A delta `msg` frame (PROTOCOL.md "Deltas"): `"delta":true,"base":B` and the Fossil delta as a JSON string
 * when it is UTF-8 (a delta of JSON text nearly always is), base64 with `"enc":"base64"` otherwise. Built once
 * per message per worker, like the full frame.
 */
export function deltaFrame(meta: MsgMeta, base: number, delta: Uint8Array): Buffer {
  const head = `${framePrefix(meta.channel, meta.pattern)}${meta.seq},"ts":${meta.ts},"delta":true,"base":${base},`;
  const bytes = Buffer.from(delta.buffer, delta.byteOffset, delta.byteLength);
  if (isUtf8(bytes)) return Buffer.from(`${head}"data":${JSON.stringify(bytes.toString("utf8"))}}`);
  return Buffer.from(`${head}"enc":"base64","data":"${bytes.toString("base64")}"}`);
}

/**
 * A coalesced JSON frame: the `msg` frames joined by one line feed (`\n`), each byte for byte as it is sent
 * alone. Every `msg` frame starts with `{` and ends with `}`, and `}` LF `{` cannot occur inside one JSON text
 * (a raw LF is only whitespace there, and no `{` may follow a `}` across whitespace), so a reader splits at
 * exactly those three bytes even when a payload is pretty-printed.
 */
export function joinLines(frames: readonly Uint8Array[]): Buffer {
  let size = frames.length - 1;
  for (const f of frames) size += f.length;
  const out = Buffer.allocUnsafe(size);
  let o = 0;
  for (const [i, f] of frames.entries()) {
    if (i > 0) out[o++] = 0x0a;
    out.set(f, o);
    o += f.length;
  }
  return out;
}

/** A durable delivery's fields of its `msg` frame. */
function durableFields(d: NonNullable<MsgMeta["durable"]>): string {
  const again = d.redelivered ? `,"redelivered":true,"deliveries":${d.deliveries}` : "";
  return `,"durable":${JSON.stringify(d.name)}${again}`;
}

/** Bytes a frame needs beyond its prefix and payload: seq, ts and keys (16 + 6 + 20 + 8 ASCII at most). */
const FRAME_SLACK = 64;

/**
 * Frames for many stored messages of one pattern at once, written into one buffer and returned as slices
 * of it: one allocation per page instead of one per message, digits written in place. Byte-identical to
 * `msgFrame`'s (it is used for the rare payload or timestamp the fast path does not take). `verbatim[i]`, when
 * given, says whether frame i holds its payload as it is, just before the closing brace (a JSON payload).
 */
export function buildFrames(pattern: string, messages: readonly StoredMsg[], verbatim?: boolean[]): Buffer[] {
  const prefixes = new Map<string, Buffer>();
  const prefixOf = (channel: string): Buffer => {
    let p = prefixes.get(channel);
    if (!p) {
      p = Buffer.from(framePrefix(channel, pattern));
      prefixes.set(channel, p);
    }
    return p;
  };
  let size = 0;
  for (const m of messages) size += prefixOf(m.channel).length + FRAME_SLACK + m.payload.length;
  const b = Buffer.allocUnsafe(size);
  const out: Buffer[] = new Array(messages.length);
  let o = 0;
  for (const [i, m] of messages.entries()) {
    const end = m.type === undefined ? writeMsgFrame(b, o, prefixOf(m.channel), m.seq, m.ts, m.payload) : -1;
    if (end < 0) {
      out[i] = msgFrame({ channel: m.channel, pattern, seq: m.seq, ts: m.ts, type: m.type }, m.payload);
      if (verbatim) verbatim[i] = m.type === undefined && isJsonPayload(m.payload);
      continue;
    }
    if (verbatim) verbatim[i] = true;
    out[i] = b.subarray(o, end);
    o = end;
  }
  return out;
}

/** 2^42 ms (the year 2109): below it the spacing of doubles is at most 2^-11 ms, under half a µs. */
const TS_DIGITS_MAX_MS = 2 ** 42;

/**
 * Writes a `msg` frame at `b[o..]` (room for prefix + FRAME_SLACK + payload needed); returns the offset after
 * it, or -1 when the frame must take the general path (a payload that is not JSON, a timestamp with more
 * than three decimals).
 */
function writeMsgFrame(b: Buffer, o: number, prefix: Buffer, seq: number, ts: number, payload: Uint8Array): number {
  // Millisecond timestamps with at most three decimals (the broker's µs) are written digit by digit, below
  // TS_DIGITS_MAX_MS only: there doubles lie closer than half a µs, so the three decimals are the shortest text
  // that reads back as `ts`, which is what JavaScript writes. Above it (after the year 2109) one double can stand
  // for two µs values and JavaScript may write fewer digits (8860848215536.28, not .279): the general path.
  const us = Math.round(ts * 1_000);
  if (!isJsonPayload(payload) || us / 1_000 !== ts || !Number.isSafeInteger(seq) || us < 0 || ts >= TS_DIGITS_MAX_MS) return -1;
  b.set(prefix, o);
  o = writeUint(b, o + prefix.length, seq);
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
  return o;
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

/**
 * Whether a stored payload is exactly one JSON value in UTF-8, so that it can be spliced into a frame as
 * it is. The first and last bytes reject most other payloads at once; the rest is parsed (once per message
 * per worker, never per socket): a payload written by another NATS client may start with `{` and end with
 * `}` without being JSON, or hold bytes that are not UTF-8, and either would make the frame invalid.
 */
export function isJsonPayload(p: Uint8Array): boolean {
  const first = p[0];
  const last = p[p.length - 1];
  if (first === undefined || last === undefined) return false;
  const shaped = first === 0x7b ? last === 0x7d : first === 0x5b ? last === 0x5d : first === 0x22 ? last === 0x22 && p.length > 1 : p.length <= 32;
  return shaped && isJsonBytes(p);
}

/** A binary payload's fields in JSON: `"enc":"base64","type":<content type>,"data":<base64>`. */
const bytesFields = (p: Uint8Array, type: string): string =>
  `"enc":"base64","type":${JSON.stringify(type)},"data":"${Buffer.from(p.buffer, p.byteOffset, p.byteLength).toString("base64")}"`;

/**
 * The data fields of a message as JSON text: `"data":<payload>`, or with `"enc":"text"` / `"enc":"base64"`
 * (and `"type"` for bytes published with a content type).
 */
export function dataFields(p: Uint8Array, type?: string): string {
  if (type !== undefined) return bytesFields(p, type);
  const bytes = Buffer.from(p.buffer, p.byteOffset, p.byteLength);
  if (isJsonPayload(p)) return `"data":${bytes.toString("utf8")}`;
  if (isUtf8(bytes)) return `"enc":"text","data":${JSON.stringify(bytes.toString("utf8"))}`;
  return `"enc":"base64","data":"${bytes.toString("base64")}"`;
}

const idPart = (id: Id | undefined): string => (id === undefined ? "" : `,"id":${JSON.stringify(id)}`);

export const okFrame = (id: Id | undefined, extra?: Readonly<Record<string, unknown>>): string => {
  let s = `{"op":"ok"${idPart(id)}`;
  if (extra) for (const [k, v] of Object.entries(extra)) if (v !== undefined) s += `,${JSON.stringify(k)}:${JSON.stringify(v)}`;
  return `${s}}`;
};

/** An `err` frame; `temporary` says whether retrying can help (the code's default from WIRE_ERRORS). */
export const errFrame = (id: Id | undefined, code: ErrorCode, message: string, temporary = WIRE_ERRORS[code].temporary): string =>
  `{"op":"err"${idPart(id)},"code":${JSON.stringify(code)},"message":${JSON.stringify(message)},"temporary":${temporary}}`;

/** The server ended a subscription (an operator's `unsubscribe`, an expired subscription token): `{"op":"unsub","channel":…,"reason":…[,"code":…]}`. */
export const unsubFrame = (channel: string, reason: string, code?: ErrorCode): string =>
  `{"op":"unsub","channel":${JSON.stringify(channel)},"reason":${JSON.stringify(reason)}${code === undefined ? "" : `,"code":${JSON.stringify(code)}`}}`;

/** `pong`: the server's clock, ms since the epoch with µs decimals, for clients estimating their clock offset. */
export const pongFrame = (id: Id | undefined, time = serverTime()): string => `{"op":"pong"${idPart(id)},"time":${time.toFixed(3)}}`;

/** Any server frame but `msg` as JSON text, byte for byte what fanout.v1 clients have always read. */
export function jsonFrame(f: ServerFrame): string {
  switch (f.op) {
    case "ok":
      return okFrame(f.id, f.fields);
    case "err": {
      const e = errFrame(f.id, f.code, f.message, f.temporary);
      return f.appCode === undefined ? e : `${e.slice(0, -1)},"appCode":${JSON.stringify(f.appCode)}}`;
    }
    case "pong":
      return pongFrame(f.id, f.time);
    case "unsub":
      return unsubFrame(f.channel, f.reason, f.code);
    case "live":
      return `{"op":"live","sub":${JSON.stringify(f.sub)},"seq":${f.seq}}`;
    case "sub":
      return `{"op":"sub","channel":${JSON.stringify(f.channel)},"auto":true,"seq":${f.seq}${f.epoch !== undefined ? `,"epoch":${JSON.stringify(f.epoch)}` : ""}}`;
    case "join":
    case "leave": {
      const info = f.info === undefined ? "" : `,"info":${JSON.stringify(f.info)}`;
      return `{"op":"${f.op}","channel":${JSON.stringify(f.channel)},"client":${JSON.stringify(f.client)},"user":${JSON.stringify(f.user)}${info}}`;
    }
    case "presence":
      return `{"op":"presence"${idPart(f.id)},"channel":${JSON.stringify(f.channel)},"members":${JSON.stringify(f.members)},"truncated":${f.truncated}}`;
  }
}
