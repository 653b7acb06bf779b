/** A JetStream publish acknowledgement (`PubAck`), or its error. */
export type PubAck = { stream?: string; seq?: number; duplicate?: boolean; error?: { code?: number; err_code?: number; description?: string } };

const decoder = new TextDecoder();
const OPEN = Buffer.from('{"stream":"', "latin1");
const SEQ = Buffer.from(',"seq":', "latin1");
const DUPLICATE = Buffer.from(',"duplicate":true', "latin1");

/**
 * Reads a PubAck. nats-server writes a successful one as `{"stream":"S","seq":N[,"duplicate":true]}` (with a JetStream domain, a `domain` field
 * comes between):
 * that layout is read from the bytes (no TextDecoder pass, no JSON.parse, one small object per publish); any
 * other (an error, a layout this does not know) goes through JSON.parse. Throws when it is not JSON.
 */
export function parsePubAck(b: Uint8Array): PubAck {
  if (b.length < OPEN.length + SEQ.length + 3 || !startsAt(b, 0, OPEN) || b[b.length - 1] !== 0x7d) return slow(b);
  let i = OPEN.length;
  while (i < b.length && b[i] !== 0x22 && b[i] !== 0x5c) i++; // the stream name's closing quote (no escapes)
  if (b[i] !== 0x22) return slow(b);
  const stream = latin1(b, OPEN.length, i);
  const at = i + 1; // a domain, or any other field, before the seq: the general path
  if (!startsAt(b, at, SEQ)) return slow(b);
  let seq = 0;
  let j = at + SEQ.length;
  const digits = j;
  for (; j < b.length; j++) {
    const c = b[j] ?? 0;
    if (c < 0x30 || c > 0x39) break;
    seq = seq * 10 + (c - 0x30);
  }
  if (j === digits || j - digits > 15) return slow(b);
  const rest = b.length - 1 - j;
  if (rest === 0) return { stream, seq };
  if (rest === DUPLICATE.length && startsAt(b, j, DUPLICATE)) return { stream, seq, duplicate: true };
  return slow(b);
}

function slow(b: Uint8Array): PubAck {
  return JSON.parse(decoder.decode(b)) as PubAck;
}

function startsAt(b: Uint8Array, at: number, key: Uint8Array): boolean {
  if (at + key.length > b.length) return false;
  for (let k = 0; k < key.length; k++) if (b[at + k] !== key[k]) return false;
  return true;
}

function latin1(b: Uint8Array, s: number, e: number): string {
  let out = "";
  for (let i = s; i < e; i++) {
    const c = b[i] ?? 0;
    if (c > 0x7e) return decoder.decode(b.subarray(s, e)); // not ASCII: decode as UTF-8
    out += String.fromCharCode(c);
  }
  return out;
}
