import type { Msg } from "@nats-io/transport-node";
import { CONTENT_TYPE_HEADER, storedType } from "../../protocol/content-type.js";
import { PUBLISHER_HEADER, type StoredPublisher } from "../../protocol/publisher-info.js";
import { TAGS_HEADER, type StoredTags } from "../../protocol/tags.js";

/** What the gateway reads from JetStream's headers on direct-get replies and republished messages. */
export type JsHeaders = {
  /** Status code of the reply (204 end of batch, 404 …); 0 for a message. */
  code: number;
  /** `Nats-Subject`: the stored subject. */
  subject: string;
  /** `Nats-Sequence`. */
  seq: number;
  /** `Nats-Time-Stamp` as ms since the epoch with µs precision. */
  ts: number;
  /** `Nats-Num-Pending`: matching messages after this one (direct-get batches). */
  pending: number;
  /** `Nats-Last-Sequence`: on a republished message the previous seq stored on its subject. */
  last: number;
  /** A status reply's description (`NATS/1.0 408 Request Timeout` → "Request Timeout"); "" otherwise. */
  description: string;
  /** `Fanout-Content-Type`: a binary payload's content type (protocol/content-type.ts); absent for JSON. */
  type?: string;
  /** `Fanout-Publisher`: the WebSocket client that published it, as stored (protocol/publisher-info.ts reads it); absent otherwise. */
  publisher?: StoredPublisher;
  /** `Fanout-Tags`: the publication's tags, as stored (protocol/tags.ts reads them); absent otherwise. */
  tags?: StoredTags;
};

type RawMsg = { _rdata?: Uint8Array; _msg?: { hdr: number } };

/**
 * How many headers each path read, per process. The fast paths lean on nats.js' private fields (`raw`) and
 * on nats-server's header layout (`fixed`); an upgrade of either that moves them would only make replay
 * slower, so a test against a real server checks that real messages take them (test/js-headers-paths.test.ts).
 */
export const jsHeaderPaths = {
  /** nats.js messages read from their raw header bytes. */
  raw: 0,
  /** nats.js messages read through `m.headers` (the fallback: nats.js no longer exposes the bytes). */
  decoded: 0,
  /** Header blocks in the fixed layout of direct-get replies and republished messages, read value by value. */
  fixed: 0,
  /** Header blocks read by the general loop (messages with headers of their own, statuses, another layout). */
  general: 0,
};

const K_SUBJECT = key("Nats-Subject");
const K_SEQUENCE = key("Nats-Sequence");
const K_TIME = key("Nats-Time-Stamp");
const K_PENDING = key("Nats-Num-Pending");
const K_LAST = key("Nats-Last-Sequence");
const K_TYPE = key(CONTENT_TYPE_HEADER);
const K_PUBLISHER = key(PUBLISHER_HEADER);
const K_TAGS = key(TAGS_HEADER);

function key(s: string): Uint8Array {
  return Buffer.from(s, "latin1");
}

/**
 * Reads the JetStream headers straight from the message's header bytes. nats.js would decode the whole
 * block into a map of strings (a TextDecoder pass, a split, a canonicalised append per header) and every
 * `get` filters the keys again: measured as the largest client cost of a replay. Falls back to nats.js'
 * headers when the message does not expose its raw bytes (another nats.js version).
 */
export function jsHeaders(m: Msg): JsHeaders | undefined {
  const raw = m as unknown as RawMsg;
  const hdr = raw._msg?.hdr ?? -1;
  if (raw._rdata instanceof Uint8Array && hdr > 0) {
    jsHeaderPaths.raw++;
    return parseJsHeaders(raw._rdata, hdr);
  }
  const h = m.headers;
  if (!h) return undefined;
  jsHeaderPaths.decoded++;
  const ts = h.get("Nats-Time-Stamp");
  const publisher = h.get(PUBLISHER_HEADER) || undefined;
  const tags = h.get(TAGS_HEADER) || undefined;
  return {
    code: h.code ?? 0,
    subject: h.get("Nats-Subject"),
    seq: Number(h.get("Nats-Sequence") || 0),
    ts: ts ? parseTimestampText(ts) : 0,
    pending: Number(h.get("Nats-Num-Pending") || 0),
    last: Number(h.get("Nats-Last-Sequence") || 0),
    description: h.description ?? "",
    type: storedType(h.get(CONTENT_TYPE_HEADER)),
    ...(publisher !== undefined ? { publisher } : {}),
    ...(tags !== undefined ? { tags } : {}),
  };
}

let lastSubjectBytes: Uint8Array = new Uint8Array(0);
let lastSubject = "";

const STATUS_AND_STREAM = key("NATS/1.0\r\nNats-Stream: ");

/**
 * Parses `NATS/1.0[ code desc]\r\nKey: value\r\n…\r\n\r\n` in `b[start, end)`. Replies to direct gets and
 * republished messages of stored messages without headers of their own have a fixed layout (nats-server's
 * `dgb` and republish formats): those are read value by value, skipping the keys; anything else (a
 * stored message with its own headers, a status) goes through the general loop.
 */
export function parseJsHeaders(b: Uint8Array, end: number, start = 0): JsHeaders {
  const fixed = end - start > 64 && same(b, start, STATUS_AND_STREAM) ? fixedLayout(b, start, end) : undefined;
  if (fixed) {
    jsHeaderPaths.fixed++;
    return fixed;
  }
  jsHeaderPaths.general++;
  return generalLayout(b, start, end);
}

/** `\r\nNats-<X>…: ` separator at `i`: CR, the key's first letter after `Nats-`, the colon at `colon`. */
const sep = (b: Uint8Array, i: number, letter: number, second: number, colon: number): boolean =>
  b[i] === 0x0d && b[i + 7] === letter && b[i + 8] === second && b[i + colon] === 0x3a;

function fixedLayout(b: Uint8Array, start: number, end: number): JsHeaders | undefined {
  let i = start + STATUS_AND_STREAM.length;
  while (i < end && b[i] !== 0x0d) i++; // stream name
  if (!sep(b, i, 0x53, 0x75, 14)) return undefined; // \r\nNats-Subject:
  let s = i + 16;
  for (i = s; i < end && b[i] !== 0x0d; i++);
  const subject = subjectOf(b, s, i);
  if (!sep(b, i, 0x53, 0x65, 15)) return undefined; // \r\nNats-Sequence:
  s = i + 17;
  for (i = s; i < end && b[i] !== 0x0d; i++);
  const seq = uint(b, s, i);
  if (!sep(b, i, 0x54, 0x69, 17)) return undefined; // \r\nNats-Time-Stamp:
  s = i + 19;
  for (i = s; i < end && b[i] !== 0x0d; i++);
  const ts = parseTimestampBytes(b, s, i);
  let pending = 0;
  if (sep(b, i, 0x4e, 0x75, 18)) {
    // \r\nNats-Num-Pending:
    s = i + 20;
    for (i = s; i < end && b[i] !== 0x0d; i++);
    pending = uint(b, s, i);
  }
  if (!sep(b, i, 0x4c, 0x61, 20)) return undefined; // \r\nNats-Last-Sequence:
  s = i + 22;
  for (i = s; i < end && b[i] !== 0x0d; i++);
  const last = uint(b, s, i);
  if (b[i + 2] !== 0x0d) return undefined; // more headers follow: not the fixed layout
  return { code: 0, subject, seq, ts, pending, last, description: "" };
}

function generalLayout(b: Uint8Array, start: number, end: number): JsHeaders {
  let code = 0;
  let subject = "";
  let seq = 0;
  let ts = 0;
  let pending = 0;
  let last = 0;
  let description = "";
  let type: string | undefined;
  let publisher: StoredPublisher | undefined;
  let tags: StoredTags | undefined;
  // Status line: "NATS/1.0" optionally followed by " <code> <description>".
  let i = start + 8;
  if (b[i] === 0x20) {
    i++;
    for (let c = b[i]; c !== undefined && c >= 48 && c <= 57; c = b[++i]) code = code * 10 + (c - 48);
  }
  const d0 = b[i] === 0x20 ? i + 1 : i;
  // Plain loops: Buffer#indexOf costs more than scanning these short lines.
  while (i < end && b[i] !== 0x0a) i++;
  if (code !== 0 && i - 1 > d0) description = Buffer.from(b.buffer, b.byteOffset + d0, i - 1 - d0).toString("utf8");
  i++;
  while (i < end) {
    let colon = i;
    while (colon < end && b[colon] !== 0x3a) colon++;
    if (colon >= end) break;
    let eol = colon;
    while (eol < end && b[eol] !== 0x0d) eol++;
    let vs = colon + 1;
    if (b[vs] === 0x20) vs++;
    switch (colon - i) {
      case 13:
        if (same(b, i, K_SEQUENCE)) seq = uint(b, vs, eol);
        break;
      case 12:
        if (same(b, i, K_SUBJECT)) subject = subjectOf(b, vs, eol);
        break;
      case 15:
        if (same(b, i, K_TIME)) ts = parseTimestampBytes(b, vs, eol);
        break;
      case 16:
        if (same(b, i, K_PENDING)) pending = uint(b, vs, eol);
        // Only messages with headers of their own come here: the fixed layout has none.
        else if (same(b, i, K_PUBLISHER) && eol > vs) publisher = Buffer.from(b.buffer, b.byteOffset + vs, eol - vs).toString("latin1");
        break;
      case 11:
        if (same(b, i, K_TAGS) && eol > vs) tags = Buffer.from(b.buffer, b.byteOffset + vs, eol - vs).toString("latin1");
        break;
      case 18:
        if (same(b, i, K_LAST)) last = uint(b, vs, eol);
        break;
      case 19:
        // Only messages with headers of their own come here: the fixed layout has none.
        if (same(b, i, K_TYPE)) type = storedType(Buffer.from(b.buffer, b.byteOffset + vs, eol - vs).toString("latin1"));
        break;
    }
    i = eol + 2;
  }
  const h: JsHeaders = { code, subject, seq, ts, pending, last, description };
  if (type !== undefined) h.type = type;
  if (publisher !== undefined) h.publisher = publisher;
  if (tags !== undefined) h.tags = tags;
  return h;
}

function same(b: Uint8Array, at: number, k: Uint8Array): boolean {
  for (let j = 0; j < k.length; j++) if (b[at + j] !== k[j]) return false;
  return true;
}

/** The decimal number in b[s, e); a byte that is not a digit (or the buffer's end) ends it. */
function uint(b: Uint8Array, s: number, e: number): number {
  let v = 0;
  for (let i = s; i < e; i++) {
    const c = b[i];
    if (c === undefined || c < 48 || c > 57) break;
    v = v * 10 + (c - 48);
  }
  return v;
}

/** Consecutive messages mostly share their subject: reuse the decoded string when the bytes match. */
function subjectOf(b: Uint8Array, s: number, e: number): string {
  const len = e - s;
  if (len === lastSubjectBytes.length) {
    let j = 0;
    while (j < len && b[s + j] === lastSubjectBytes[j]) j++;
    if (j === len) return lastSubject;
  }
  lastSubjectBytes = b.slice(s, e);
  lastSubject = Buffer.from(lastSubjectBytes.buffer, lastSubjectBytes.byteOffset, len).toString("utf8");
  return lastSubject;
}

/** `2026-11-22T18:02:18.478069664Z` (UTC, as nats-server writes it) → ms with µs precision. */
export function parseTimestampBytes(b: Uint8Array, s: number, e: number): number {
  if (e - s < 20 || (b[s + 19] !== 0x2e && b[s + 19] !== 0x5a)) return parseTimestampText(Buffer.from(b.buffer, b.byteOffset + s, e - s).toString("latin1"));
  // Messages of the same second share "yyyy-mm-ddThh:mm:ss": reuse its value.
  let j = 0;
  while (j < 19 && b[s + j] === lastSecond[j]) j++;
  const ms = j === 19 ? lastSecondMs : secondOf(b, s);
  let us = 0;
  let digits = 0;
  if (b[s + 19] === 0x2e) {
    for (let i = s + 20; digits < 6 && i < e; i++, digits++) {
      const c = b[i];
      if (c === undefined || c < 48 || c > 57) break;
      us = us * 10 + (c - 48);
    }
  }
  for (; digits < 6; digits++) us *= 10;
  return (ms * 1_000 + us) / 1_000;
}

const lastSecond = new Uint8Array(19);
let lastSecondMs = 0;

function secondOf(b: Uint8Array, s: number): number {
  lastSecond.set(b.subarray(s, s + 19));
  lastSecondMs = Date.UTC(
    uint(b, s, s + 4),
    uint(b, s + 5, s + 7) - 1,
    uint(b, s + 8, s + 10),
    uint(b, s + 11, s + 13),
    uint(b, s + 14, s + 16),
    uint(b, s + 17, s + 19),
  );
  return lastSecondMs;
}

/** The same for a string (µs precision; Date.parse alone keeps ms). */
export function parseTimestampText(s: string): number {
  if (s.length < 20 || (s[19] !== "." && s[19] !== "Z")) return Date.parse(s);
  const ms = Date.parse(`${s.slice(0, 19)}Z`);
  let us = 0;
  let digits = 0;
  if (s[19] === ".") {
    for (let i = 20; digits < 6; i++, digits++) {
      const c = s.charCodeAt(i);
      if (!(c >= 48 && c <= 57)) break;
      us = us * 10 + (c - 48);
    }
  }
  for (; digits < 6; digits++) us *= 10;
  return (ms * 1_000 + us) / 1_000;
}
