// Readers for the lean engine: the benchmark payload inside a server's frame, read straight from the bytes
// of the read buffer. Nothing is decoded to a string on the usual path; the publisher id is left as a byte
// range for the Receiver to intern. Searches are bounded by the frame's end: the read buffer is shared and
// holds older bytes past it. Anything unexpected falls back to JSON.parse of that frame.
//
// Payload: {"p":"<id>","s":<seq>,"t":<µs>[,"o":<µs>],"x":"<pad>"} or {"p":"<id>","end":true,"total":N[,"o":<µs>]}

/** What the last scan found; one shared object, overwritten by each call. */
export type ByteScan = {
  /** Publisher id as a byte range of the scanned buffer (pStr set instead when the fallback parsed it). */
  pStart: number;
  pEnd: number;
  pStr: string | null;
  s: number;
  t: number;
  end: boolean;
  total: number;
  /** The publisher's clock offset to the reference server, µs, or NaN when it sent none. */
  o: number;
  /** Gateway: stream sequence of a `msg` frame, or -1. */
  seq: number;
  /** Gateway: the `sub` (subscription pattern) as a byte range, or -1 (then subStr, when the fallback parsed it). */
  subStart: number;
  subEnd: number;
  subStr: string | null;
};

export const bs: ByteScan = { pStart: 0, pEnd: 0, pStr: null, s: 0, t: 0, end: false, total: 0, o: NaN, seq: -1, subStart: -1, subEnd: -1, subStr: null };

const enc = (s: string): Uint8Array => Buffer.from(s, "latin1");
const P = enc('"p":"');
const S = enc('","s":');
const T = enc(',"t":');
const O = enc(',"o":');
const END = enc('","end":true,"total":');
const OP_MSG = enc('{"op":"msg"');
const SEQ = enc('"seq":');
const SUB = enc('"sub":"');
const DATA = enc('"data":');
const SIO_MSG = enc('42["msg",');
const PUSH = enc('{"push":');
const LBRACE = enc("{");
const OP_MSG_ANYWHERE = enc('"op":"msg"');

/** First index of `needle` in buf[from, end), or -1. */
export function findBytes(buf: Uint8Array, needle: Uint8Array, from: number, end: number): number {
  const n = needle.length;
  const first = needle[0]!;
  const last = end - n;
  outer: for (let i = from; i <= last; i++) {
    if (buf[i] !== first) continue;
    for (let j = 1; j < n; j++) if (buf[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

function startsWith(buf: Uint8Array, at: number, end: number, needle: Uint8Array): boolean {
  const n = needle.length;
  if (end - at < n) return false;
  for (let j = 0; j < n; j++) if (buf[at + j] !== needle[j]) return false;
  return true;
}

/** Position after the number at `i`; the value is left in `num`. NaN when there is no digit. */
let num = 0;
function readNumber(buf: Uint8Array, i: number, end: number): number {
  let neg = false;
  if (i < end && buf[i] === 45 /* - */) {
    neg = true;
    i++;
  }
  const from = i;
  let v = 0;
  while (i < end) {
    const c = buf[i]!;
    if (c < 48 || c > 57) break;
    v = v * 10 + (c - 48);
    i++;
  }
  if (i === from) {
    num = NaN;
    return i;
  }
  if (i < end && (buf[i] === 46 || buf[i] === 101 || buf[i] === 69)) {
    // A fraction or exponent: rare here (the gateway's ts); read it with Number().
    let k = i + 1;
    while (k < end && buf[k] !== 44 && buf[k] !== 125 && buf[k] !== 93) k++;
    v = Number(Buffer.from(buf.buffer, buf.byteOffset + from, k - from).toString("latin1"));
    i = k;
  }
  num = neg ? -v : v;
  return i;
}

/**
 * Reads a benchmark payload whose `{` is at or after `from` (the first `"p":"` in range is taken).
 * Returns false when it is not one.
 */
const OPEN_P = enc('{"p":"');

/** scanPayloadBytes for a payload known to start at `at` (the usual case: pub-cluster writes "p" first). */
function scanPayloadAt(buf: Buffer, at: number, end: number): boolean {
  return startsWith(buf, at, end, OPEN_P) ? scanFromP(buf, at + 1, at, end) : scanPayloadBytes(buf, at, end);
}

export function scanPayloadBytes(buf: Buffer, from: number, end: number): boolean {
  const pi = findBytes(buf, P, from, end);
  return scanFromP(buf, pi, from, end);
}

/** Reads the payload whose `"p":"` is at pi (-1: none; then the fallback parses from `from`). */
function scanFromP(buf: Buffer, pi: number, from: number, end: number): boolean {
  if (pi < 0) return fallback(buf, from, end);
  const ps = pi + 5;
  let i = ps;
  while (i < end && buf[i] !== 34 /* " */) i++;
  if (i >= end) return fallback(buf, from, end);
  bs.pStart = ps;
  bs.pEnd = i;
  bs.pStr = null;
  bs.o = NaN;
  if (startsWith(buf, i, end, S)) {
    i = readNumber(buf, i + S.length, end);
    bs.s = num;
    if (!startsWith(buf, i, end, T)) return fallback(buf, from, end);
    i = readNumber(buf, i + T.length, end);
    bs.t = num;
    bs.end = false;
    if (startsWith(buf, i, end, O)) {
      readNumber(buf, i + O.length, end);
      bs.o = num;
    }
    return bs.s === bs.s && bs.t === bs.t ? true : fallback(buf, from, end);
  }
  if (startsWith(buf, i, end, END)) {
    i = readNumber(buf, i + END.length, end);
    bs.total = num;
    bs.end = true;
    bs.s = 0;
    bs.t = 0;
    if (startsWith(buf, i, end, O)) {
      readNumber(buf, i + O.length, end);
      bs.o = num;
    }
    return bs.total === bs.total ? true : fallback(buf, from, end);
  }
  return fallback(buf, from, end);
}

const CHANNEL_AFTER_OP = enc(',"channel":"');
const SUB_AFTER_CHANNEL = enc('","sub":"');
const SEQ_AFTER_SUB = enc('","seq":');
const TS_AFTER_SEQ = enc(',"ts":');

/** Index of the next `"` at or after i (strings in these frames carry no escapes), or e. */
function quote(buf: Uint8Array, i: number, e: number): number {
  while (i < e && buf[i] !== 34) i++;
  return i;
}

/**
 * The gateway's own layout, `{"op":"msg","channel":"…","sub":"…","seq":N,"ts":T,"data":…`, read in one pass;
 * false when the frame is laid out otherwise (then the general search runs).
 */
function gatewayLayout(buf: Buffer, s: number, e: number): boolean {
  let i = s + OP_MSG.length;
  if (!startsWith(buf, i, e, CHANNEL_AFTER_OP)) return false;
  i = quote(buf, i + CHANNEL_AFTER_OP.length, e);
  if (!startsWith(buf, i, e, SUB_AFTER_CHANNEL)) return false;
  const subStart = i + SUB_AFTER_CHANNEL.length;
  i = quote(buf, subStart, e);
  if (!startsWith(buf, i, e, SEQ_AFTER_SUB)) return false;
  const subEnd = i;
  i = readNumber(buf, i + SEQ_AFTER_SUB.length, e);
  const seq = num;
  if (!startsWith(buf, i, e, TS_AFTER_SEQ)) return false;
  i += TS_AFTER_SEQ.length;
  while (i < e && buf[i] !== 44 /* , */) i++;
  if (!startsWith(buf, i + 1, e, DATA)) return false;
  bs.subStart = subStart;
  bs.subEnd = subEnd;
  bs.subStr = null;
  bs.seq = seq;
  gatewayDataAt = i + 1 + DATA.length;
  return true;
}
let gatewayDataAt = 0;

/** A gateway frame: 1 a benchmark `msg`, 0 another frame (a control frame for the caller), -1 a `msg` not ours. */
export function scanGatewayBytes(buf: Buffer, s: number, e: number): 1 | 0 | -1 {
  if (!startsWith(buf, s, e, OP_MSG)) {
    return findBytes(buf, OP_MSG_ANYWHERE, s, e) < 0 ? 0 : parsedGateway(buf, s, e);
  }
  if (gatewayLayout(buf, s, e)) return scanPayloadAt(buf, gatewayDataAt, e) ? 1 : -1;
  const d = findBytes(buf, DATA, s, e);
  if (d < 0) return parsedGateway(buf, s, e);
  const si = findBytes(buf, SUB, s, d);
  bs.subStr = null;
  if (si >= 0) {
    let k = si + SUB.length;
    bs.subStart = k;
    while (k < d && buf[k] !== 34) k++;
    bs.subEnd = k;
  } else {
    bs.subStart = -1;
    bs.subEnd = -1;
  }
  const q = findBytes(buf, SEQ, s, d);
  if (q >= 0) {
    readNumber(buf, q + SEQ.length, d);
    bs.seq = num;
  } else bs.seq = -1;
  return scanPayloadBytes(buf, d + DATA.length, e) ? 1 : -1;
}

function parsedGateway(buf: Buffer, s: number, e: number): 1 | -1 {
  let f: unknown;
  try {
    f = JSON.parse(buf.toString("utf8", s, e));
  } catch {
    return -1;
  }
  if (!f || typeof f !== "object") return -1;
  const o = f as { seq?: unknown; sub?: unknown; data?: unknown };
  bs.seq = typeof o.seq === "number" ? o.seq : -1;
  bs.subStart = -1;
  bs.subEnd = -1;
  bs.subStr = typeof o.sub === "string" ? o.sub : null;
  return fromValue(o.data) ? 1 : -1;
}

/** A Socket.IO text frame: 1 a `42["msg",<payload>]` event, 0 anything else (Engine.IO/Socket.IO control). */
export function scanSocketIoBytes(buf: Buffer, s: number, e: number): 1 | 0 | -1 {
  if (!startsWith(buf, s, e, SIO_MSG)) return 0;
  return scanPayloadBytes(buf, s + SIO_MSG.length, e) ? 1 : -1;
}

/**
 * One line of a centrifuge JSON frame (the server joins several replies and pushes with "\n"): 1 a
 * publication push with a benchmark payload, 0 anything else (replies, pings), -1 a push not ours.
 */
export function scanCentrifugeLine(buf: Buffer, s: number, e: number): 1 | 0 | -1 {
  if (!startsWith(buf, s, e, PUSH)) return 0;
  const d = findBytes(buf, DATA, s, e);
  if (d < 0) return 0;
  return scanPayloadBytes(buf, d + DATA.length, e) ? 1 : -1;
}

function fallback(buf: Buffer, from: number, end: number): boolean {
  const open = findBytes(buf, LBRACE, from, end);
  if (open < 0) return false;
  // The payload runs from `open` to its matching brace; the frame's own closing "}" or "]" follow it, so the
  // longest prefix ending in "}" that parses is taken (a rare path: only odd frames come here).
  const text = buf.toString("utf8", open, end);
  let v: unknown;
  for (let cut = text.length, n = 0; cut > 0 && n < 8; cut = text.lastIndexOf("}", cut - 2) + 1, n++) {
    try {
      v = JSON.parse(text.slice(0, cut));
      break;
    } catch {
      v = undefined;
    }
  }
  return fromValue(v);
}

function fromValue(v: unknown): boolean {
  if (!v || typeof v !== "object") return false;
  const o = v as Record<string, unknown>;
  if (typeof o.p !== "string") return false;
  bs.pStr = o.p;
  bs.o = typeof o.o === "number" ? o.o : NaN;
  if (o.end === true && typeof o.total === "number") {
    bs.end = true;
    bs.total = o.total;
    bs.s = 0;
    bs.t = 0;
    return true;
  }
  if (typeof o.s !== "number" || typeof o.t !== "number") return false;
  bs.end = false;
  bs.s = o.s;
  bs.t = o.t;
  return true;
}
