import { applyDelta } from "fossil-delta";
import type { Frame } from "./types.js";
import type { MsgRaw } from "./wire.js";

/**
 * A `delta: "fossil"` subscription's bases (PROTOCOL.md "Deltas"): the last payload and its
 * seq per channel. A full `msg` sets the channel's base; a delta `msg` (`"delta":true,"base":B`) applies to
 * the base when the base's seq is B. Without that base — never received, forgotten past the bound, or a
 * delta that does not apply — it answers `resubscribe`: the caller subscribes again from its position and
 * the server starts each channel with a full message, so the application never sees wrong data.
 */

/** What a `msg` frame of a delta subscription gives. */
export type DeltaOutcome = { ok: true; data: unknown } | DeltaLost;
/** No base for a delta (`no_base`), or a delta that does not apply to it (`bad_delta`): subscribe again. */
export type DeltaLost = { ok: false; resubscribe: true; reason: "no_base" | "bad_delta" };

/** Bases kept per subscription by default: a server keeps at most as many channels per subscription. */
export const MAX_DELTA_CHANNELS = 1_000;

/**
 * Largest payload a delta may make (64 MiB, as the Kotlin SDK's `Fossil.MAX_TARGET_BYTES`): a delta of a few
 * bytes can copy its base over and over, so the size its first line declares is checked before applying it.
 */
export const MAX_DELTA_TARGET_BYTES = 64 * 1024 * 1024;

export class DeltaBases {
  private readonly bases = new Map<string, { seq: number; payload: Uint8Array }>();

  constructor(
    private readonly maxChannels = MAX_DELTA_CHANNELS,
    private readonly maxTargetBytes = MAX_DELTA_TARGET_BYTES,
  ) {}

  /**
   * The message of a `msg` frame: its data as the application sees it, or `resubscribe`. `raw` is the
   * frame's text as received (fanout.v1: a full JSON message's base is the exact text of its `data`, which
   * the server splices in as stored and writes last), or its payload's bytes (fanout.v1.msgpack).
   */
  receive(f: Frame, raw: MsgRaw): DeltaOutcome {
    const channel = String(f.channel);
    const seq = Number(f.seq);
    if (f.delta === true) {
      const got = this.apply(channel, seq, Number(f.base), deltaBytes(f));
      if (!got.ok) return got;
      try {
        return { ok: true, data: JSON.parse(utf8Decode(got.payload)) };
      } catch {
        return this.lost(channel, "bad_delta"); // the server makes deltas of JSON payloads only
      }
    }
    this.full(channel, seq, payloadBytes(f, raw));
    return { ok: true, data: f.data };
  }

  /** A full message of `channel`: its payload is the channel's base from now on. */
  full(channel: string, seq: number, payload: Uint8Array): void {
    if (!this.bases.has(channel) && this.bases.size >= this.maxChannels) {
      const oldest = this.bases.keys().next().value;
      if (oldest !== undefined) this.bases.delete(oldest);
    }
    this.bases.set(channel, { seq, payload });
  }

  /** The payload a delta against the base `baseSeq` makes, which becomes the base; or why there is none. */
  apply(channel: string, seq: number, baseSeq: number, delta: Uint8Array): { ok: true; payload: Uint8Array } | DeltaLost {
    const base = this.bases.get(channel);
    if (base === undefined || base.seq !== baseSeq) return this.lost(channel, "no_base");
    if (deltaTargetSize(delta) > this.maxTargetBytes) return this.lost(channel, "bad_delta");
    let payload: Uint8Array;
    try {
      payload = applyDelta(base.payload, delta);
    } catch {
      return this.lost(channel, "bad_delta");
    }
    this.bases.set(channel, { seq, payload });
    return { ok: true, payload };
  }

  /** Forgets every base: the subscription is made again (the server starts each channel full). */
  reset(): void {
    this.bases.clear();
  }

  get size(): number {
    return this.bases.size;
  }

  private lost(channel: string, reason: DeltaLost["reason"]): DeltaLost {
    this.bases.delete(channel);
    return { ok: false, resubscribe: true, reason };
  }
}

const FOSSIL_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~";
const FOSSIL_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < FOSSIL_DIGITS.length; i++) FOSSIL_VALUE[FOSSIL_DIGITS.charCodeAt(i)] = i;

/**
 * The target size a Fossil delta declares on its first line (base-64 digits `0-9 A-Z _ a-z ~`), read without
 * applying anything; 0 when there is no such number (the applier refuses that delta itself).
 */
export function deltaTargetSize(delta: Uint8Array): number {
  let size = 0;
  for (const c of delta) {
    const v = c < 128 ? FOSSIL_VALUE[c]! : -1;
    if (v < 0) break;
    size = size * 64 + v;
    if (size > Number.MAX_SAFE_INTEGER / 64) return Infinity;
  }
  return size;
}

/**
 * The payload bytes of a full `msg` frame: the raw text of `data`, or the string / base64 it carries; in
 * MessagePack (`raw` is bytes) the payload's bytes as they came.
 */
export function payloadBytes(f: Frame, raw: MsgRaw): Uint8Array {
  if (raw instanceof Uint8Array) return raw;
  const text = raw;
  if (f.enc === "text") return utf8Encode(String(f.data));
  if (f.enc === "base64") return base64Decode(String(f.data));
  const at = text.indexOf('"data":');
  if (at < 0 || !text.endsWith("}")) throw new Error("msg frame without data last");
  return utf8Encode(text.slice(at + 7, -1));
}

/** The delta of a delta `msg` frame: its string's UTF-8 bytes, or base64 with `"enc":"base64"`; MessagePack's bytes. */
export function deltaBytes(f: Frame): Uint8Array {
  if (f.data instanceof Uint8Array) return f.data;
  return f.enc === "base64" ? base64Decode(String(f.data)) : utf8Encode(String(f.data));
}

// UTF-8 with the host's TextEncoder / TextDecoder (four times faster) where it has them, by hand where it
// does not (React Native hosts may lack them, and atob).
type TextCodecs = {
  TextEncoder?: new () => { encode(s: string): Uint8Array };
  TextDecoder?: new (label: string, opts: { fatal: boolean }) => { decode(b: Uint8Array): string };
};
let hostCodecs: { encode(s: string): Uint8Array; decode(b: Uint8Array): string } | null | undefined;
function host(): typeof hostCodecs {
  if (hostCodecs === undefined) {
    const g = globalThis as unknown as TextCodecs;
    if (g.TextEncoder && g.TextDecoder) {
      const [e, d] = [new g.TextEncoder(), new g.TextDecoder("utf-8", { fatal: true })];
      hostCodecs = { encode: (s) => e.encode(s), decode: (b) => d.decode(b) };
    } else hostCodecs = null;
  }
  return hostCodecs;
}

export const utf8Encode = (s: string): Uint8Array => host()?.encode(s) ?? utf8EncodeByHand(s);
/** UTF-8 to a string; a malformed sequence throws (a delta result that is not text is not JSON either). */
export const utf8Decode = (b: Uint8Array): string => (host() ? host()!.decode(b) : utf8DecodeByHand(b));

export function utf8EncodeByHand(s: string): Uint8Array {
  const out: number[] = [];
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return Uint8Array.from(out);
}

export function utf8DecodeByHand(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length;) {
    const c = b[i]!;
    const n = c < 0x80 ? 0 : c >= 0xf0 && c < 0xf5 ? 3 : c >= 0xe0 && c < 0xf0 ? 2 : c >= 0xc2 && c < 0xe0 ? 1 : -1;
    if (n < 0 || i + n >= b.length) throw new Error("not UTF-8");
    let cp = n === 0 ? c : c & (0x3f >> n);
    for (let k = 1; k <= n; k++) {
      const x = b[i + k]!;
      if ((x & 0xc0) !== 0x80) throw new Error("not UTF-8");
      cp = (cp << 6) | (x & 63);
    }
    if ((n === 2 && (cp < 0x800 || (cp >= 0xd800 && cp < 0xe000))) || (n === 3 && (cp < 0x10000 || cp > 0x10ffff))) throw new Error("not UTF-8");
    s += String.fromCodePoint(cp);
    i += n + 1;
  }
  return s;
}

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

export function base64Encode(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length; i += 3) {
    const n = (b[i]! << 16) | ((b[i + 1] ?? 0) << 8) | (b[i + 2] ?? 0);
    // The last group's missing bytes are padding.
    for (let k = 0; k < 4; k++) s += k > b.length - i ? "=" : B64[(n >> (18 - 6 * k)) & 63];
  }
  return s;
}

export function base64Decode(s: string): Uint8Array {
  const clean = s.replace(/=+$/, "");
  const out = new Uint8Array(Math.floor((clean.length * 3) / 4));
  let acc = 0;
  let bits = 0;
  let o = 0;
  for (const ch of clean) {
    const v = B64.indexOf(ch);
    if (v < 0) throw new Error("not base64");
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 0xff;
    }
  }
  return out;
}
