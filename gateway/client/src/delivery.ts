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
  return {
    channel: String(f.channel),
    sub: String(f.sub),
    seq,
    ts: Number(f.ts),
    data: f.data,
    enc: f.enc === "text" || f.enc === "base64" || f.enc === "binary" ? f.enc : undefined,
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
