import { createInbox, type NatsConnection } from "@nats-io/transport-node";
import type { Bus } from "../broker.js";
import { guarded } from "../../util/guarded.js";

/**
 * The Bus over core NATS: a request is one publish with a reply inbox, a scatter a publish whose inbox
 * stays open for every subscriber's reply. Used by the workers (their main connection) and by the primary
 * (its own), so that the admin listener reaches the same workers.
 */
export function natsBus(nc: NatsConnection): Bus {
  return {
    serve(subject, answer, queue) {
      nc.subscribe(subject, {
        ...(queue ? { queue } : {}),
        callback: guarded("control request", (err, m) => {
          if (err || !m.reply) return;
          const reply = m.reply;
          answer(m.data).then(
            (body) => {
              if (nc.isClosed()) return;
              try {
                nc.publish(reply, body);
              } catch {
                // Larger than the server's max_payload: say so in a reply the asker can read.
                nc.publish(reply, Buffer.from('{"error":"reply_too_large"}'));
              }
            },
            () => undefined, // answer() turns every failure into a reply body; nothing is left to send
          );
        }),
      });
    },
    scatter(subject, body, onReply) {
      const inbox = createInbox();
      const sub = nc.subscribe(inbox, { callback: guarded("control reply", (err, m) => (err ? undefined : onReply(m.data))) });
      nc.publish(subject, body, { reply: inbox });
      return { stop: () => sub.unsubscribe() };
    },
    async request(subject, body, timeoutMs) {
      const m = await nc.request(subject, body, { timeout: timeoutMs });
      return m.data;
    },
  };
}
