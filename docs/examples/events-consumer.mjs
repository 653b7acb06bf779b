// A backend that reads the gateway's events stream over NATS with a durable consumer of its own, instead of
// (or beside) the webhook. The consumer is the backend's: it remembers the position across restarts, and
// several copies of this script sharing the name share the work. Each event is printed as one JSON line,
// with its stream sequence as `id` (the same id the webhook sends), and acknowledged once handled.
//
//   NATS_URL=nats://127.0.0.1:4222 node docs/examples/events-consumer.mjs [--durable my-backend] [--count N]
//
// The gateway runs with EVENTS=all (or a list of kinds); EVENTS_WEBHOOK_URL is not needed for this.
import { parseArgs } from "node:util";
import { connect } from "@nats-io/transport-node";
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";

const { values } = parseArgs({
  options: {
    durable: { type: "string", default: "my-backend" },
    stream: { type: "string", default: "FANOUT_EVENTS" },
    // Only these kinds, e.g. fanout.events.disconnect; default all of them.
    filter: { type: "string", default: "fanout.events.>" },
    // Stop after this many events (0: run until interrupted).
    count: { type: "string", default: "0" },
  },
});
const count = Number(values.count);

const nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222" });
const jsm = await jetstreamManager(nc);
// Made by the first run (from the oldest stored event; DeliverPolicy.New would skip the past); adding it
// again with the same settings is a no-op, so later runs go on where the last one stopped.
await jsm.consumers.add(values.stream, {
  durable_name: values.durable,
  ack_policy: AckPolicy.Explicit,
  deliver_policy: DeliverPolicy.All,
  filter_subject: values.filter,
});
const consumer = await jetstream(nc).consumers.get(values.stream, values.durable);

let seen = 0;
const messages = await consumer.consume();
process.on("SIGINT", () => void messages.stop());
for await (const m of messages) {
  const event = { id: m.seq, ...m.json() };
  // Handle it here (store it, send a push notification…); ack only once that is done: unacknowledged
  // events come again after the consumer's ack wait (30 s by default).
  console.log(JSON.stringify(event));
  m.ack();
  if (count > 0 && ++seen >= count) break;
}
await nc.drain();
