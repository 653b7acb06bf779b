import { jsonNestsDeeper } from "../depth.js";
import { mayHoldHugeNumber } from "../json-numbers.js";
import { message, type Field, type FieldType, type Message } from "./proto-schema.js";
import { Stored } from "./shapes.js";

/**
 * Protobuf's wire format for the messages of proto-schema.ts, written by hand for this schema: objects with
 * the protocol's field names in and out, `json` fields as JSON values. The decoder trusts no length: every
 * varint, length and nesting is checked against what is left of its parent before anything is read or
 * allocated, and a message that breaks a rule is refused with a `ProtoError` saying which, never decoded in
 * part.
 */

/** Deepest nesting of messages the decoder follows (the schema's own is 5 but for FilterNode's nodes). */
export const MAX_PROTO_DEPTH = 16;

/** Why bytes are not a message of the schema. */
export class ProtoError extends Error {}

const WIRE_VARINT = 0;
const WIRE_I64 = 1;
const WIRE_LEN = 2;
const WIRE_I32 = 5;

const wireOf = (t: FieldType): number => (typeof t === "object" || t === "string" || t === "bytes" || t === "json" ? WIRE_LEN : WIRE_VARINT);

/** Bytes being written: small pieces (tags, varints) gathered, large ones (payloads) kept by reference until `finish`. */
class Out {
  readonly parts: Uint8Array[] = [];
  size = 0;
  private small: number[] = [];

  byte(b: number): void {
    this.small.push(b);
    this.size++;
  }

  varint(n: number): void {
    if (n < 0 || !Number.isSafeInteger(n)) return this.bigVarint(BigInt.asUintN(64, BigInt(Math.trunc(n))));
    while (n > 0x7f) {
      this.byte((n % 128) | 0x80);
      n = Math.floor(n / 128);
    }
    this.byte(n);
  }

  private bigVarint(v: bigint): void {
    while (v > 0x7fn) {
      this.byte(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    this.byte(Number(v));
  }

  bytes(b: Uint8Array): void {
    this.flush();
    this.parts.push(b);
    this.size += b.length;
  }

  append(o: Out): void {
    this.flush();
    o.flush();
    for (const p of o.parts) this.parts.push(p);
    this.size += o.size;
  }

  flush(): void {
    if (this.small.length === 0) return;
    this.parts.push(Uint8Array.from(this.small));
    this.small = [];
  }

  finish(): Buffer {
    this.flush();
    return Buffer.concat(this.parts, this.size);
  }
}

/** A `json` field's bytes: a stored payload as it is, bytes as they are, any other value as its JSON. */
function jsonBytes(v: unknown): Uint8Array {
  if (v instanceof Stored) return v.payload;
  if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  return Buffer.from(JSON.stringify(v) ?? "null");
}

function writeScalar(out: Out, f: Field, t: Exclude<FieldType, object>, v: unknown): void {
  switch (t) {
    case "bool":
      return out.varint(v ? 1 : 0);
    case "sint64": {
      const n = v as number;
      return out.varint(n >= 0 ? n * 2 : -n * 2 - 1);
    }
    case "uint32":
    case "uint64":
    case "int32":
    case "int64":
      if (typeof v !== "number") throw new Error(`${f.name} must be a number`);
      return out.varint(v);
    case "string": {
      const b = Buffer.from(String(v), "utf8");
      out.varint(b.length);
      return out.bytes(b);
    }
    case "bytes":
    case "json": {
      const b = t === "json" ? jsonBytes(v) : (v as Uint8Array);
      out.varint(b.length);
      return out.bytes(b);
    }
  }
}

/** Proto3 leaves out fields at their default: absent, false, 0 and "" are not written (a `json` null is: `null`). */
const isDefault = (t: FieldType, v: unknown): boolean => v === undefined || (t !== "json" && (v === null || v === false || v === 0 || v === ""));

function writeField(out: Out, f: Field, v: unknown): void {
  const t = f.type;
  if (typeof t === "object" && "map" in t) {
    for (const [k, val] of Object.entries(v as Record<string, unknown>)) {
      const entry = new Out();
      writeField(entry, { name: "key", no: 1, type: "string" }, k);
      writeField(entry, { name: "value", no: 2, type: t.map }, val);
      out.varint(f.no * 8 + WIRE_LEN);
      out.varint(entry.size);
      out.append(entry);
    }
    return;
  }
  const tag = f.no * 8 + wireOf(t);
  if (typeof t === "object") {
    if (v === null) return;
    out.varint(tag);
    const body = encodeMessage(message(t.msg), v as Record<string, unknown>);
    out.varint(body.size);
    return void out.append(body);
  }
  if (isDefault(t, v)) return;
  out.varint(tag);
  writeScalar(out, f, t, v);
}

function encodeMessage(msg: Message, o: Record<string, unknown>): Out {
  const out = new Out();
  // A server API read's publication carries bytes as base64 beside a null data (centrifugo/reads.ts): here they are the data.
  const obj = typeof o.b64data === "string" && (o.data === null || o.data === undefined) ? { ...o, data: Buffer.from(o.b64data, "base64") } : o;
  for (const f of msg.fields) {
    const v = obj[f.name];
    if (v === undefined) continue;
    if (f.repeated) for (const item of v as unknown[]) writeField(out, { ...f, repeated: undefined } as Field, item);
    else writeField(out, f, v);
  }
  return out;
}

/** One message of the schema, prefixed by its varint length (the format's framing: several follow each other). */
export function encodeDelimited(name: string, o: object): Buffer {
  const body = encodeMessage(message(name), o as Record<string, unknown>);
  const out = new Out();
  out.varint(body.size);
  out.append(body);
  return out.finish();
}

/** The bytes of `n` (a safe integer >= 0) as a varint. */
export function varintLength(n: number): number {
  let len = 1;
  for (; n > 0x7f; len++) n = Math.floor(n / 128);
  return len;
}

/** Writes `n` (a safe integer >= 0) as a varint at `pos`; returns the position after it. */
export function writeVarint(buf: Uint8Array, pos: number, n: number): number {
  while (n > 0x7f) {
    buf[pos++] = (n % 128) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[pos++] = n;
  return pos;
}

/** What decoding found besides the values: some `json` field held what JSON cannot (huge numbers, bytes). */
export type DecodeState = { mayNotFitJson: boolean };

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** A reader of bytes [pos, end) of a frame, refusing anything that reaches past `end`. */
class In {
  constructor(
    readonly buf: Uint8Array,
    public pos: number,
    readonly end: number,
  ) {}

  /** A varint: a number while it fits 49 bits, a bigint beyond (uint64 offsets, negative int32s). */
  varint(): number | bigint {
    let n = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new ProtoError("a varint is cut short");
      const b = this.buf[this.pos++] as number;
      if (i < 7) {
        n += (b & 0x7f) * mul;
        mul *= 128;
        if (b < 0x80) return n;
        continue;
      }
      let big = BigInt(n);
      for (let j = i; ; j++) {
        const c = j === i ? b : (this.buf[this.pos++] as number);
        big |= BigInt(c & 0x7f) << BigInt(7 * j);
        if (c < 0x80) return big;
        if (j === 9) throw new ProtoError("a varint is longer than 10 bytes");
        if (this.pos >= this.end) throw new ProtoError("a varint is cut short");
      }
    }
    throw new ProtoError("a varint is longer than 10 bytes");
  }

  /** A length-delimited field's length, checked against what is left. */
  length(): number {
    const n = this.varint();
    const left = this.end - this.pos;
    if (typeof n !== "number" || n > left) throw new ProtoError(`a length of ${n} bytes is more than the ${left} left`);
    return n;
  }

  skip(wire: number): void {
    const need = wire === WIRE_I64 ? 8 : wire === WIRE_I32 ? 4 : wire === WIRE_LEN ? this.length() : -1;
    if (wire === WIRE_VARINT) return void this.varint();
    if (need < 0) throw new ProtoError(`wire type ${wire} is not one this protocol uses`);
    if (need > this.end - this.pos) throw new ProtoError(`a field of ${need} bytes is more than the ${this.end - this.pos} left`);
    this.pos += need;
  }
}

function scalar(t: Exclude<FieldType, object | "string" | "bytes" | "json">, v: number | bigint): number | boolean {
  const big = typeof v === "bigint";
  switch (t) {
    case "bool":
      return v !== 0 && v !== 0n;
    case "uint32":
      return big ? Number(BigInt.asUintN(32, v)) : v % 2 ** 32;
    case "uint64":
      return Number(v);
    case "int32":
      return big ? Number(BigInt.asIntN(32, v)) : (v % 2 ** 32) | 0;
    case "int64":
      return big ? Number(BigInt.asIntN(64, v)) : v;
    case "sint64":
      return big ? Number((v >> 1n) ^ -(v & 1n)) : v % 2 === 0 ? v / 2 : -(v + 1) / 2;
  }
}

function jsonValue(bytes: Uint8Array, st: DecodeState): unknown {
  if (bytes.length === 0) return undefined;
  let text: string | undefined;
  try {
    text = utf8.decode(bytes);
  } catch {
    text = undefined;
  }
  if (text !== undefined && !jsonNestsDeeper(text)) {
    try {
      const v = JSON.parse(text) as unknown;
      st.mayNotFitJson ||= mayHoldHugeNumber(text);
      return v;
    } catch {
      // not JSON: kept as bytes below
    }
  }
  st.mayNotFitJson = true;
  return new Uint8Array(bytes);
}

function readValue(r: In, f: Field, t: FieldType, st: DecodeState, depth: number): unknown {
  if (typeof t === "object") {
    const len = r.length();
    const end = r.pos + len;
    const v = "msg" in t ? decodeMessage(message(t.msg), r.buf, r.pos, end, st, depth + 1) : decodeEntry(t.map, r.buf, r.pos, end, st, depth + 1);
    r.pos = end;
    return v;
  }
  if (t === "string" || t === "bytes" || t === "json") {
    const len = r.length();
    const bytes = r.buf.subarray(r.pos, r.pos + len);
    r.pos += len;
    if (t === "bytes") return new Uint8Array(bytes);
    if (t === "json") return jsonValue(bytes, st);
    try {
      return utf8.decode(bytes);
    } catch {
      throw new ProtoError(`${f.name} is not UTF-8`);
    }
  }
  return scalar(t, r.varint());
}

/** A map entry (field 1 the key, field 2 the value) as [key, value]. */
function decodeEntry(value: { msg: string } | "string", buf: Uint8Array, pos: number, end: number, st: DecodeState, depth: number): [string, unknown] {
  const entry = { fields: [], byNo: new Map<number, Field>([...ENTRY_KEY, [2, { name: "value", no: 2, type: value }]]), byName: new Map() };
  const o = decodeMessage(entry, buf, pos, end, st, depth);
  const v = o.value ?? (value === "string" ? "" : {});
  return [(o.key as string | undefined) ?? "", v];
}

const ENTRY_KEY: [number, Field][] = [[1, { name: "key", no: 1, type: "string" }]];

function decodeMessage(msg: Message, buf: Uint8Array, pos: number, end: number, st: DecodeState, depth: number): Record<string, unknown> {
  if (depth > MAX_PROTO_DEPTH) throw new ProtoError(`messages nest deeper than ${MAX_PROTO_DEPTH}`);
  const r = new In(buf, pos, end);
  const o: Record<string, unknown> = {};
  while (r.pos < r.end) {
    const tag = r.varint();
    if (typeof tag !== "number" || tag > 0xffff_ffff) throw new ProtoError("a field tag is too large");
    const no = Math.floor(tag / 8);
    const wire = tag % 8;
    if (no === 0) throw new ProtoError("field number 0");
    const f = msg.byNo.get(no);
    if (!f) {
      r.skip(wire);
      continue;
    }
    if (wire !== wireOf(f.type)) throw new ProtoError(`field ${f.name} has wire type ${wire}, not ${wireOf(f.type)}`);
    const v = readValue(r, f, f.type, st, depth);
    if (typeof f.type === "object" && "map" in f.type) {
      const [k, val] = v as [string, unknown];
      const map = (o[f.name] ??= {}) as Record<string, unknown>;
      Object.defineProperty(map, k, { value: val, enumerable: true, writable: true, configurable: true });
    } else if (f.repeated) ((o[f.name] ??= []) as unknown[]).push(v);
    else if (v !== undefined) o[f.name] = v;
  }
  return o;
}

/** One message of the schema from bytes [pos, end) of `buf`; throws `ProtoError` when they are not one. */
export function decodeMessageAt(name: string, buf: Uint8Array, pos: number, end: number, st: DecodeState): Record<string, unknown> {
  return decodeMessage(message(name), buf, pos, end, st, 0);
}

/**
 * Calls `each` with the bounds of every length-prefixed message in bytes [pos, end) of `buf`, in order, and
 * returns how many there were: the format's framing alone, for readers that look into some messages only.
 * Throws `ProtoError` when a length lies (longer than what is left, or not a varint) or there are more than `max`.
 */
export function forEachDelimited(buf: Uint8Array, pos: number, end: number, max: number, each: (start: number, end: number) => void): number {
  const r = new In(buf, pos, end);
  let n = 0;
  while (r.pos < r.end) {
    if (n === max) throw new ProtoError(`a frame carries at most ${max} commands`);
    const len = r.length();
    n++;
    each(r.pos, r.pos + len);
    r.pos += len;
  }
  return n;
}

/**
 * A frame of length-prefixed messages of the schema, in order; at most `max` of them. Throws `ProtoError`
 * when a length lies, a message is malformed, or there are more than `max`.
 */
export function decodeDelimited(name: string, buf: Uint8Array, max: number, st: DecodeState): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  forEachDelimited(buf, 0, buf.length, max, (s, e) => out.push(decodeMessageAt(name, buf, s, e, st)));
  return out;
}
