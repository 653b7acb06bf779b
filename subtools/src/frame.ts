// Cheap readers for the benchmark payload and the gateway's `msg` frame: a few indexOf calls and a
// digit loop instead of JSON.parse, so a delivery allocates only the publisher id string. Anything
// unexpected falls back to JSON.parse.

/** What {@link scanPayload} found; one shared object, overwritten by each call. */
export type Scanned = {
  p: string;
  s: number;
  t: number;
  end: boolean;
  total: number;
  /** Gateway stream sequence from a `msg` frame, or -1. */
  gwSeq: number;
  /** Gateway channel from a `msg` frame, or "". */
  channel: string;
  /** Gateway subscription pattern (`sub`) of a `msg` frame, or "". */
  sub: string;
  /** The publisher's clock offset to the reference server (µs), or NaN when the payload has none. */
  o: number;
};

export const scanned: Scanned = { p: "", s: 0, t: 0, end: false, total: 0, gwSeq: -1, channel: "", sub: "", o: NaN };

/** Reads a non-negative number at `i`; NaN if there is none. */
function numberAt(str: string, i: number): number {
  let n = 0;
  let j = i;
  const len = str.length;
  while (j < len) {
    const c = str.charCodeAt(j);
    if (c < 48 || c > 57) break;
    n = n * 10 + (c - 48);
    j++;
  }
  if (j === i) return NaN;
  const c = j < len ? str.charCodeAt(j) : 0;
  if (c === 46 /* . */ || c === 101 /* e */ || c === 69 /* E */) {
    let k = j + 1;
    while (k < len && ",}] ".indexOf(str[k]!) < 0) k++;
    return Number(str.slice(i, k));
  }
  return n;
}

/** The optionally negative number after `key` (searched from `from`), or NaN when the key is absent. */
function signedAt(str: string, key: string, from: number): number {
  const i = str.indexOf(key, from);
  if (i < 0) return NaN;
  const at = i + key.length;
  return str.charCodeAt(at) === 45 /* - */ ? -numberAt(str, at + 1) : numberAt(str, at);
}

/**
 * Reads a benchmark payload starting at `from` (the payload's opening brace) into {@link scanned}.
 * Returns false if it is not a benchmark payload.
 */
export function scanPayload(str: string, from: number): boolean {
  const out = scanned;
  const pi = str.indexOf('"p":"', from);
  if (pi < 0) return fallback(str, from);
  const pe = str.indexOf('"', pi + 5);
  if (pe < 0) return fallback(str, from);
  out.p = str.slice(pi + 5, pe);
  out.o = signedAt(str, '"o":', pe);
  const ti = str.indexOf('"t":', from);
  if (ti < 0) {
    const ei = str.indexOf('"end":true', from);
    const ni = str.indexOf('"total":', from);
    if (ei < 0 || ni < 0) return fallback(str, from);
    out.end = true;
    out.total = numberAt(str, ni + 8);
    out.s = 0;
    out.t = 0;
    return out.total === out.total;
  }
  const si = str.indexOf('"s":', from);
  if (si < 0) return fallback(str, from);
  out.end = false;
  out.s = numberAt(str, si + 4);
  out.t = numberAt(str, ti + 4);
  if (out.s !== out.s || out.t !== out.t) return fallback(str, from);
  return true;
}

const MSG_PREFIX = '{"op":"msg"';

/**
 * Reads a gateway frame. Returns 1 for a benchmark delivery (fields in {@link scanned}), 0 for any
 * other frame (the caller parses it as a control frame), -1 for a `msg` frame whose data is not a
 * benchmark payload.
 */
export function scanGatewayFrame(str: string): 1 | 0 | -1 {
  if (!str.startsWith(MSG_PREFIX)) {
    if (str.indexOf('"op":"msg"') < 0) return 0;
    return scanParsedFrame(str);
  }
  const d = str.indexOf('"data":');
  if (d < 0) return scanParsedFrame(str);
  const q = str.indexOf('"seq":');
  scanned.gwSeq = q >= 0 && q < d ? numberAt(str, q + 6) : -1;
  const c = str.indexOf('"channel":"');
  if (c >= 0 && c < d) {
    const ce = str.indexOf('"', c + 11);
    scanned.channel = str.slice(c + 11, ce);
  } else scanned.channel = "";
  const b = str.indexOf('"sub":"');
  scanned.sub = b >= 0 && b < d ? str.slice(b + 7, str.indexOf('"', b + 7)) : "";
  return scanPayload(str, d + 7) ? 1 : scanParsedFrame(str);
}

function scanParsedFrame(str: string): 1 | -1 {
  let f: unknown;
  try {
    f = JSON.parse(str);
  } catch {
    return -1;
  }
  if (!f || typeof f !== "object") return -1;
  const o = f as { seq?: unknown; channel?: unknown; data?: unknown };
  scanned.gwSeq = typeof o.seq === "number" ? o.seq : -1;
  scanned.channel = typeof o.channel === "string" ? o.channel : "";
  scanned.sub = typeof (o as { sub?: unknown }).sub === "string" ? (o as { sub: string }).sub : "";
  return fromObject(o.data) ? 1 : -1;
}

function fallback(str: string, from: number): boolean {
  let v: unknown;
  try {
    v = JSON.parse(from === 0 ? str : str.slice(from));
  } catch {
    return false;
  }
  return fromObject(v);
}

function fromObject(v: unknown): boolean {
  if (!v || typeof v !== "object") return false;
  const o = v as Record<string, unknown>;
  if (typeof o.p !== "string") return false;
  scanned.p = o.p;
  scanned.o = typeof o.o === "number" ? o.o : NaN;
  if (o.end === true && typeof o.total === "number") {
    scanned.end = true;
    scanned.total = o.total;
    scanned.s = 0;
    scanned.t = 0;
    return true;
  }
  if (typeof o.s !== "number" || typeof o.t !== "number") return false;
  scanned.end = false;
  scanned.s = o.s;
  scanned.t = o.t;
  return true;
}
