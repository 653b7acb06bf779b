import { base64Decode } from "./deltas.js";
import type { Frame, GatewayMessage } from "./types.js";

/**
 * A `msg` frame as the handler gets it. `send` puts a settle frame on the socket the message came on and
 * returns nothing useful when that socket is gone: acks on a closed socket are moot (the server released its
 * unacked messages for redelivery). Only `ack: true` subscriptions (`explicitAck`) send ack/nak/term.
 */
export function toMessage(f: Frame, seq: number, subChannel: string, explicitAck: boolean, send: (frame: Record<string, unknown>) => void): GatewayMessage {
  let settled = !explicitAck;
  const reply = (op: "ack" | "nak" | "term", extra?: Record<string, unknown>) => {
    if (settled) return;
    settled = true;
    send({ op, seq, sub: subChannel, ...extra });
  };
  // A binary payload (published with a content type): bytes, whichever subprotocol carried them.
  const type = typeof f.type === "string" ? f.type : undefined;
  return {
    channel: String(f.channel),
    sub: String(f.sub),
    seq,
    ts: Number(f.ts),
    data: type !== undefined && f.enc === "base64" ? base64Decode(String(f.data)) : f.data,
    enc: type !== undefined ? "binary" : f.enc === "text" || f.enc === "base64" || f.enc === "binary" ? f.enc : undefined,
    type,
    durable: typeof f.durable === "string" ? f.durable : undefined,
    redelivered: f.redelivered === true ? true : undefined,
    deliveries: typeof f.deliveries === "number" ? f.deliveries : undefined,
    ack: () => reply("ack"),
    nak: (delayMs?: number) => reply("nak", delayMs === undefined ? undefined : { delay: delayMs }),
    term: () => reply("term"),
    inProgress: () => {
      if (!settled) send({ op: "inprogress", seq, sub: subChannel });
    },
  };
}
