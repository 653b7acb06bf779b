/**
 * The server-to-client half of the NATS protocol (`INFO`, `MSG`, `HMSG`, `PING`, `PONG`, `+OK`, `-ERR`), read
 * straight from socket chunks for the direct-get connection (direct-link.ts). A message is handed over as
 * offsets into the chunk it arrived in — no object, no string, no copy — so that a page of thousands of
 * stored messages costs one header parse and one payload view each. nats.js' parser walks every byte of
 * every control line through a state machine and builds a message object per delivery: measured as half of
 * a replay's client CPU. No socket in here: tested in process with chunks cut at every byte.
 */

/**
 * What the reader found. `buf` is the socket's chunk (or several joined): Node's net socket never reuses
 * one, so views into it stay valid after the call.
 */
export interface WireHandler {
  /**
   * A `MSG` or `HMSG`: its subject is `buf[subject, subjectEnd)`, its header block `buf[headers, payload)`
   * (empty for `MSG`), its payload `buf[payload, end)`.
   */
  msg(buf: Buffer, subject: number, subjectEnd: number, headers: number, payload: number, end: number): void;
  ping(): void;
  pong(): void;
  info(json: string): void;
  /** `-ERR '<text>'`: the server closes the connection after most of them. */
  err(text: string): void;
}

/** The bytes are not the NATS protocol (or a line is longer than any the server sends). */
export class WireProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WireProtocolError";
  }
}

const CR = 0x0d;
const SPACE = 0x20;
/** Longer control lines are not NATS (the server's own INFO is a few KB; a subject is at most a few hundred bytes). */
export const MAX_CONTROL_LINE = 64 * 1024;
const CRLF = Buffer.from("\r\n");

export class WireReader {
  /** Bytes of an unfinished line or message, waiting for the rest. */
  private held: Buffer[] = [];
  private heldBytes = 0;
  /** Total bytes the held message needs (0: not known yet, the control line is incomplete). */
  private need = 0;

  constructor(private readonly h: WireHandler) {}

  /** Reads every complete line and message in `chunk` (after what earlier chunks left). */
  feed(chunk: Buffer): void {
    if (this.heldBytes > 0) {
      this.held.push(chunk);
      this.heldBytes += chunk.length;
      // A large message arrives in many chunks: join them only once all its bytes are here.
      if (this.need > 0 && this.heldBytes < this.need) return;
      chunk = Buffer.concat(this.held, this.heldBytes);
      this.held = [];
      this.heldBytes = 0;
      this.need = 0;
    }
    const rest = this.parse(chunk);
    if (rest < chunk.length) {
      this.held.push(chunk.subarray(rest));
      this.heldBytes = chunk.length - rest;
    }
  }

  /** Parses from the start of `b`; returns where the first incomplete item begins (b.length: none). */
  private parse(b: Buffer): number {
    const len = b.length;
    let pos = 0;
    while (pos < len) {
      const eol = b.indexOf(CRLF, pos);
      if (eol < 0) {
        if (len - pos > MAX_CONTROL_LINE) throw new WireProtocolError(`control line longer than ${MAX_CONTROL_LINE} bytes`);
        return pos;
      }
      const c = b.readUInt8(pos) | 0x20; // ops are case-insensitive (pos < len: in range)
      if (c === 0x68 || c === 0x6d) {
        // HMSG <subject> <sid> [reply] <header bytes> <total bytes>  |  MSG <subject> <sid> [reply] <bytes>
        const hmsg = c === 0x68;
        const total = this.numberBefore(b, eol);
        const hdr = hmsg && total >= 0 ? this.numberBefore(b, this.numberStart) : 0;
        if (total < 0 || hdr < 0 || hdr > total) throw this.bad(b, pos, eol);
        const subject = pos + (hmsg ? 5 : 4);
        let subjectEnd = subject;
        while (subjectEnd < eol && b[subjectEnd] !== SPACE) subjectEnd++;
        if (subjectEnd === subject || subjectEnd >= eol) throw this.bad(b, pos, eol);
        const start = eol + 2;
        const end = start + total;
        if (end + 2 > len) {
          this.need = end + 2 - pos;
          return pos;
        }
        if (b[end] !== CR) throw new WireProtocolError("message not followed by CRLF");
        this.h.msg(b, subject, subjectEnd, start, start + hdr, end);
        pos = end + 2;
        continue;
      }
      if (c === 0x70) {
        // PING / PONG
        if (((b[pos + 1] ?? 0) | 0x20) === 0x69) this.h.ping();
        else this.h.pong();
      } else if (c === 0x69) {
        this.h.info(b.toString("utf8", pos + 5, eol));
      } else if (b[pos] === 0x2d) {
        this.h.err(b.toString("utf8", pos + 5, eol).replace(/^'|'$/g, ""));
      } else if (b[pos] !== 0x2b) {
        throw this.bad(b, pos, eol);
      }
      pos = eol + 2;
    }
    return pos;
  }

  /** Where the space before the last number read by `numberBefore` is. */
  private numberStart = 0;

  /** The decimal number that ends just before `end` and follows a space; -1 when there is none. */
  private numberBefore(b: Buffer, end: number): number {
    let v = 0;
    let m = 1;
    let i = end - 1;
    for (; i >= 0; i--) {
      const c = b[i];
      if (c === undefined || c < 48 || c > 57) break;
      const d = c - 48;
      v += d * m;
      m *= 10;
    }
    this.numberStart = i;
    return i === end - 1 || b[i] !== SPACE ? -1 : v;
  }

  private bad(b: Buffer, pos: number, eol: number): WireProtocolError {
    return new WireProtocolError(`unexpected protocol line: ${JSON.stringify(b.toString("latin1", pos, Math.min(eol, pos + 200)))}`);
  }
}
