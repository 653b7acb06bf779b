// A minimal WebSocket frame reader for server → client frames (RFC 6455 §5.2), for the lean client engine.
//
// Servers never mask, so a frame is a 2–10 byte header and its payload. The reader hands text and binary
// payloads to its sink as (buffer, start, end) without copying when a frame lies inside one TCP chunk,
// which is the usual case; bytes of a frame split across chunks are kept until the rest arrives. Fragmented
// messages (FIN clear, then continuation frames) are joined. Control frames (ping, pong, close) go to the
// sink as they come, also between the fragments of a message.

export const Opcode = { Continuation: 0x0, Text: 0x1, Binary: 0x2, Close: 0x8, Ping: 0x9, Pong: 0xa } as const;
export type Opcode = (typeof Opcode)[keyof typeof Opcode];

/** Where frames go. `buf` is only valid during the call: copy what must outlive it. */
export interface FrameSink {
  /** A complete text or binary message. */
  message(opcode: Opcode, buf: Buffer, start: number, end: number): void;
  /** A control frame: ping, pong or close (payload ≤ 125 bytes). */
  control(opcode: Opcode, buf: Buffer, start: number, end: number): void;
}

/** A frame the reader refuses; the connection should be closed with `closeCode`. */
export class FrameError extends Error {
  override readonly name = "FrameError";
  constructor(
    message: string,
    readonly closeCode: number,
  ) {
    super(message);
  }
}

/** Largest message accepted (the gateway's own cap is 64 KiB; Socket.IO and centrifuge batch a few). */
export const DEFAULT_MAX_MESSAGE = 16 << 20;

export class FrameReader {
  /** Bytes of an incomplete frame carried over from earlier chunks. */
  private carry: Buffer | null = null;
  private carryLen = 0;
  /** Fragments of a message whose final frame has not come yet. */
  private fragments: Buffer[] = [];
  private fragmentsLen = 0;
  private fragmentOpcode: Opcode = Opcode.Text;

  constructor(
    private readonly sink: FrameSink,
    private readonly maxMessage = DEFAULT_MAX_MESSAGE,
  ) {}

  /** Reads every complete frame in `buf[start, end)`; throws FrameError on a protocol violation. */
  feed(buf: Buffer, start = 0, end = buf.length): void {
    if (this.carry !== null) {
      const need = this.carryLen + (end - start);
      if (need > this.carry.length) {
        const grown = Buffer.allocUnsafe(Math.max(need, this.carry.length * 2));
        this.carry.copy(grown, 0, 0, this.carryLen);
        this.carry = grown;
      }
      buf.copy(this.carry, this.carryLen, start, end);
      this.carryLen = need;
      const c = this.carry;
      const used = this.frames(c, 0, need);
      if (used === need) {
        this.carry = null;
        this.carryLen = 0;
        return;
      }
      c.copy(c, 0, used, need);
      this.carryLen = need - used;
      return;
    }
    const used = this.frames(buf, start, end);
    if (used < end) {
      const rest = end - used;
      this.carry = Buffer.allocUnsafe(Math.max(rest * 2, 256));
      buf.copy(this.carry, 0, used, end);
      this.carryLen = rest;
    }
  }

  /** Bytes held for an incomplete frame (for tests and diagnostics). */
  get pending(): number {
    return this.carryLen + this.fragmentsLen;
  }

  /** Reads whole frames from `buf[pos, end)`; returns where the first incomplete frame starts. */
  private frames(buf: Buffer, pos: number, end: number): number {
    while (end - pos >= 2) {
      const b0 = buf[pos]!;
      const b1 = buf[pos + 1]!;
      if ((b0 & 0x70) !== 0) throw new FrameError("reserved bits set (no extension was negotiated)", 1002);
      if ((b1 & 0x80) !== 0) throw new FrameError("a server frame is masked", 1002);
      let len = b1 & 0x7f;
      let head = 2;
      if (len === 126) {
        if (end - pos < 4) return pos;
        len = buf.readUInt16BE(pos + 2);
        head = 4;
      } else if (len === 127) {
        if (end - pos < 10) return pos;
        const hi = buf.readUInt32BE(pos + 2);
        if (hi > 0x1fffff) throw new FrameError("frame length beyond 2^53", 1009);
        len = hi * 0x1_0000_0000 + buf.readUInt32BE(pos + 6);
        head = 10;
      }
      if (len > this.maxMessage) throw new FrameError(`frame of ${len} bytes is over the ${this.maxMessage}-byte limit`, 1009);
      if (end - pos < head + len) return pos;
      const s = pos + head;
      const e = s + len;
      pos = e;
      this.frame(b0, buf, s, e);
    }
    return pos;
  }

  private frame(b0: number, buf: Buffer, s: number, e: number): void {
    const fin = (b0 & 0x80) !== 0;
    const opcode = (b0 & 0x0f) as Opcode;
    if (opcode >= 0x8) {
      if (!fin || e - s > 125) throw new FrameError("a control frame is fragmented or longer than 125 bytes", 1002);
      if (opcode !== Opcode.Close && opcode !== Opcode.Ping && opcode !== Opcode.Pong) throw new FrameError(`unknown control opcode ${opcode}`, 1002);
      this.sink.control(opcode, buf, s, e);
      return;
    }
    if (opcode === Opcode.Continuation) {
      if (this.fragments.length === 0) throw new FrameError("continuation frame without a message to continue", 1002);
      this.addFragment(buf, s, e);
      if (fin) this.endFragments();
      return;
    }
    if (opcode !== Opcode.Text && opcode !== Opcode.Binary) throw new FrameError(`unknown data opcode ${opcode}`, 1002);
    if (this.fragments.length > 0) throw new FrameError("a new message began before the fragmented one ended", 1002);
    if (fin) {
      this.sink.message(opcode, buf, s, e);
      return;
    }
    this.fragmentOpcode = opcode;
    this.addFragment(buf, s, e);
  }

  private addFragment(buf: Buffer, s: number, e: number): void {
    this.fragmentsLen += e - s;
    if (this.fragmentsLen > this.maxMessage) throw new FrameError(`message over the ${this.maxMessage}-byte limit`, 1009);
    // Copied: `buf` may be the connection's reused read buffer, overwritten by the next read.
    this.fragments.push(Buffer.from(buf.subarray(s, e)));
  }

  private endFragments(): void {
    const whole = Buffer.concat(this.fragments, this.fragmentsLen);
    this.fragments = [];
    this.fragmentsLen = 0;
    this.sink.message(this.fragmentOpcode, whole, 0, whole.length);
  }
}

/** A client frame: FIN set, masked with `mask` (4 bytes) as clients must (RFC 6455 §5.3). */
export function clientFrame(opcode: Opcode, payload: Buffer, mask: Buffer): Buffer {
  const len = payload.length;
  const head = len < 126 ? 2 : len < 65536 ? 4 : 10;
  const out = Buffer.allocUnsafe(head + 4 + len);
  out[0] = 0x80 | opcode;
  if (head === 2) out[1] = 0x80 | len;
  else if (head === 4) {
    out[1] = 0x80 | 126;
    out.writeUInt16BE(len, 2);
  } else {
    out[1] = 0x80 | 127;
    out.writeUInt32BE(Math.floor(len / 0x1_0000_0000), 2);
    out.writeUInt32BE(len >>> 0, 6);
  }
  mask.copy(out, head, 0, 4);
  for (let i = 0; i < len; i++) out[head + 4 + i] = payload[i]! ^ mask[i & 3]!;
  return out;
}

/** A server frame (unmasked), for tests and for servers written in this repository. */
export function serverFrame(opcode: Opcode, payload: Buffer, fin = true): Buffer {
  const len = payload.length;
  const head = len < 126 ? 2 : len < 65536 ? 4 : 10;
  const out = Buffer.allocUnsafe(head + len);
  out[0] = (fin ? 0x80 : 0) | opcode;
  if (head === 2) out[1] = len;
  else if (head === 4) {
    out[1] = 126;
    out.writeUInt16BE(len, 2);
  } else {
    out[1] = 127;
    out.writeUInt32BE(Math.floor(len / 0x1_0000_0000), 2);
    out.writeUInt32BE(len >>> 0, 6);
  }
  payload.copy(out, head);
  return out;
}
