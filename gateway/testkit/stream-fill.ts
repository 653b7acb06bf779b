// Filling a channel straight into JetStream, fast, for the tests that need many stored messages (replay,
// catch-up at scale), and the check that what came back is that sequence, whole.
import type { JetStreamClient } from "@nats-io/jetstream";
import type { MsgFrame } from "./ws-client.js";

/** Publishes `count` messages `{i}` (i from `from`; `{n}` with key "n") to `channel` directly into JetStream, 500 in flight at a time. Returns their seqs. */
export async function publishMany(js: JetStreamClient, channel: string, count: number, from = 0, subjectPrefix = "ev", key = "i"): Promise<number[]> {
  const seqs: number[] = [];
  const enc = new TextEncoder();
  for (let i = 0; i < count; i += 500) {
    const batch = Array.from({ length: Math.min(500, count - i) }, (_, k) =>
      js.publish(`${subjectPrefix}.${channel}`, enc.encode(`{"${key}":${from + i + k}}`)),
    );
    for (const a of await Promise.all(batch)) seqs.push(a.seq);
  }
  return seqs;
}

/** Whether the messages' `data.i` run `first`, `first + 1`, … with no gap or repeat. */
export const contiguousFrom = (msgs: readonly MsgFrame[], first: number): boolean => msgs.every((m, i) => (m.data as { i: number }).i === first + i);
