import { isUtf8 } from "node:buffer";

/** Nesting deeper than this is checked by JSON.parse instead (the scanner recurses). */
const MAX_DEPTH = 256;
const TOO_DEEP = -2;

/**
 * Whether bytes are exactly one JSON value (RFC 8259) in UTF-8 — the same answer as decoding them and
 * calling JSON.parse, without building a string or any value: a stored payload is checked once per message
 * per worker before it is spliced into frames, and this is the hot path of a replay. UTF-8 validity is
 * checked natively first; the scanner then only follows the grammar (bytes ≥ 0x80 can only be string content).
 */
export function isJsonBytes(b: Uint8Array): boolean {
  if (!isUtf8(b)) return false;
  let i = ws(b, 0);
  i = value(b, i, 0);
  if (i === TOO_DEEP) return parses(b);
  return i >= 0 && ws(b, i) === b.length;
}

function parses(b: Uint8Array): boolean {
  try {
    JSON.parse(Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("utf8"));
    return true;
  } catch {
    return false;
  }
}

function ws(b: Uint8Array, i: number): number {
  for (;;) {
    const c = b[i];
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
  }
}

/** The index after the value starting at `i`, -1 when it is not one, TOO_DEEP when nested too deep. */
function value(b: Uint8Array, i: number, depth: number): number {
  const c = b[i];
  if (c === 0x7b) return object(b, i, depth + 1);
  if (c === 0x5b) return array(b, i, depth + 1);
  if (c === 0x22) return string(b, i);
  if (c === 0x74) return literal(b, i, TRUE);
  if (c === 0x66) return literal(b, i, FALSE);
  if (c === 0x6e) return literal(b, i, NULL);
  if (c === 0x2d || (c !== undefined && c >= 0x30 && c <= 0x39)) return number(b, i);
  return -1;
}

function object(b: Uint8Array, i: number, depth: number): number {
  if (depth > MAX_DEPTH) return TOO_DEEP;
  i = ws(b, i + 1);
  if (b[i] === 0x7d) return i + 1;
  for (;;) {
    if (b[i] !== 0x22) return -1;
    i = string(b, i);
    if (i < 0) return i;
    i = ws(b, i);
    if (b[i] !== 0x3a) return -1;
    i = value(b, ws(b, i + 1), depth);
    if (i < 0) return i;
    i = ws(b, i);
    if (b[i] === 0x7d) return i + 1;
    if (b[i] !== 0x2c) return -1;
    i = ws(b, i + 1);
  }
}

function array(b: Uint8Array, i: number, depth: number): number {
  if (depth > MAX_DEPTH) return TOO_DEEP;
  i = ws(b, i + 1);
  if (b[i] === 0x5d) return i + 1;
  for (;;) {
    i = value(b, i, depth);
    if (i < 0) return i;
    i = ws(b, i);
    if (b[i] === 0x5d) return i + 1;
    if (b[i] !== 0x2c) return -1;
    i = ws(b, i + 1);
  }
}

const isHex = (c: number | undefined): boolean => c !== undefined && ((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66));

function string(b: Uint8Array, i: number): number {
  i++;
  for (;;) {
    const c = b[i];
    if (c === undefined || c < 0x20) return -1;
    if (c === 0x22) return i + 1;
    if (c !== 0x5c) {
      i++;
      continue;
    }
    const e = b[i + 1];
    if (e === 0x22 || e === 0x5c || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) i += 2;
    else if (e === 0x75 && isHex(b[i + 2]) && isHex(b[i + 3]) && isHex(b[i + 4]) && isHex(b[i + 5])) i += 6;
    else return -1;
  }
}

const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x39;

function number(b: Uint8Array, i: number): number {
  if (b[i] === 0x2d) i++;
  if (b[i] === 0x30) i++;
  else if (isDigit(b[i])) while (isDigit(b[i])) i++;
  else return -1;
  if (b[i] === 0x2e) {
    i++;
    if (!isDigit(b[i])) return -1;
    while (isDigit(b[i])) i++;
  }
  if (b[i] === 0x65 || b[i] === 0x45) {
    i++;
    if (b[i] === 0x2b || b[i] === 0x2d) i++;
    if (!isDigit(b[i])) return -1;
    while (isDigit(b[i])) i++;
  }
  return i;
}

const TRUE = [0x74, 0x72, 0x75, 0x65];
const FALSE = [0x66, 0x61, 0x6c, 0x73, 0x65];
const NULL = [0x6e, 0x75, 0x6c, 0x6c];

function literal(b: Uint8Array, i: number, word: number[]): number {
  for (let k = 0; k < word.length; k++) if (b[i + k] !== word[k]) return -1;
  return i + word.length;
}

/**
 * Whether bytes can be stored and spliced into frames as they are: exactly one JSON value (isJsonBytes) on one
 * line (no CR or LF byte, which an SSE `data:` line could not carry). A publish body that passes is stored
 * as sent, without being parsed and encoded again.
 */
export function isOneLineJson(b: Uint8Array): boolean {
  return b.indexOf(0x0a) < 0 && b.indexOf(0x0d) < 0 && isJsonBytes(b);
}
