// The Centrifuge client protocol (v2) as the lean-engine clients speak it, in both formats: JSON (text frames,
// one command or reply a line) and Protobuf (subprotocol centrifuge-protobuf: binary frames of Command and
// Reply messages, each prefixed by its varint length). The Protobuf framing and the decoding of replies are
// the gateway's own (gateway/src/protocol/centrifuge/proto-wire.ts), so a client reads what the door writes
// with the code the door reads its commands with; publications are only looked into, never decoded whole,
// so that the clients cost less than the servers they measure.
import { CENTRIFUGE_PROTOBUF } from "../../../gateway/src/protocol/centrifuge/protobuf.js";
import { decodeMessageAt, encodeDelimited, forEachDelimited } from "../../../gateway/src/protocol/centrifuge/proto-wire.js";

export { CENTRIFUGE_PROTOBUF };

/** The path the Centrifuge SDKs connect to. */
export const CENTRIFUGE_PATH = "/connection/websocket";

/** The two formats of the protocol. */
export type CentrifugeFormat = "json" | "protobuf";

/** What a reply that is not a publication says, in either format (the fields a subscriber needs). */
export type CentrifugeReply = {
  id?: number;
  connect?: unknown;
  subscribe?: unknown;
  error?: { code?: number; message?: string };
  push?: { channel?: string; disconnect?: { code?: number; reason?: string } };
};

/** Most messages one frame may carry (the gateway's own bound for a client's frame). */
const MAX_PER_FRAME = 1 << 20;

/** A command in the format: a JSON line's text, or one length-prefixed Command. */
export function centrifugeCommand(format: CentrifugeFormat, cmd: Record<string, unknown>): string | Buffer {
  return format === "json" ? JSON.stringify(cmd) : encodeDelimited("Command", cmd);
}

/** The answer to a server ping (an empty reply): an empty command, `{}` in JSON, a zero length in Protobuf. */
export const pongOf = (format: CentrifugeFormat): string | Buffer => (format === "json" ? "{}" : Buffer.from([0]));

/**
 * Reads one frame: `pub(start, end)` for each publication push (its bytes, the payload among them: JSON data
 * is in both formats, as text or as bytes), `ping()` for each empty reply, `other(reply)` for the rest.
 * Throws on a frame the format does not allow (a Protobuf length that lies, a JSON line that is not JSON).
 */
export function readCentrifugeFrame(
  format: CentrifugeFormat,
  buf: Buffer,
  s: number,
  e: number,
  on: { pub(start: number, end: number): void; ping(): void; other(r: CentrifugeReply): void },
): void {
  if (format === "protobuf") {
    forEachDelimited(buf, s, e, MAX_PER_FRAME, (from, to) => {
      if (from === to) on.ping();
      // Reply field 4 (push) first, holding Push field 4 (pub) after the channel: a publication.
      else if (buf[from] === 0x22 && isProtoPublication(buf, from, to)) on.pub(from, to);
      else on.other(decodeMessageAt("Reply", buf, from, to, { mayNotFitJson: false }) as CentrifugeReply);
    });
    return;
  }
  let from = s;
  while (from < e) {
    let nl = buf.indexOf(10, from);
    if (nl < 0 || nl > e) nl = e;
    if (nl - from === 2 && buf[from] === 0x7b && buf[from + 1] === 0x7d) on.ping();
    else if (startsWith(buf, from, nl, PUSH_PUB) || (startsWith(buf, from, nl, PUSH_CHANNEL) && buf.indexOf(PUB_KEY, from) < nl)) on.pub(from, nl);
    else if (nl > from) on.other(JSON.parse(buf.toString("utf8", from, nl)) as CentrifugeReply);
    from = nl + 1;
  }
}

const PUSH_PUB = Buffer.from('{"push":{"pub":');
const PUSH_CHANNEL = Buffer.from('{"push":{"channel":');
const PUB_KEY = Buffer.from('"pub":{');

function startsWith(buf: Buffer, s: number, e: number, prefix: Buffer): boolean {
  if (e - s < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (buf[s + i] !== prefix[i]) return false;
  return true;
}

/** A Reply (bytes [s, e), starting with its push field's tag) whose Push holds a Publication. */
function isProtoPublication(buf: Buffer, s: number, e: number): boolean {
  let p = s + 1;
  const [, afterLen] = varint(buf, p, e);
  p = afterLen;
  while (p < e) {
    const tag = buf[p++]!;
    if (tag === 0x22) return true; // Push.pub
    const wire = tag & 7;
    if (wire !== 0 && wire !== 2) return false; // the Push fields before pub: id (a varint), channel (bytes)
    const [n, after] = varint(buf, p, e);
    p = wire === 0 ? after : after + n;
  }
  return false;
}

function varint(buf: Buffer, p: number, e: number): [number, number] {
  let n = 0;
  let mul = 1;
  while (p < e) {
    const b = buf[p++]!;
    n += (b & 0x7f) * mul;
    if (b < 0x80) return [n, p];
    mul *= 128;
  }
  return [n, p];
}
