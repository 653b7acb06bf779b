// --batch's gathering of publishes into batch requests, in process with a recording fake target.
import { describe, expect, it } from "vitest";
import { BatchingPublisher, type BatchCapable, type BatchEntry } from "../../src/publishers/batching.js";
import { PublishError } from "../../src/publishers/types.js";

function fakeTarget(refuse: (e: BatchEntry) => boolean = () => false): BatchCapable & { batches: BatchEntry[][] } {
  const batches: BatchEntry[][] = [];
  return {
    batches,
    acks: true,
    connect: async () => undefined,
    publish: async () => undefined,
    flush: async () => undefined,
    close: async () => undefined,
    publishBatch: async (items) => {
      batches.push([...items]);
      return items.map((e) => (refuse(e) ? new PublishError("forbidden: no", "forbidden") : null));
    },
  };
}

describe("pub-cluster --batch", () => {
  it("what one turn queues goes out in batches of at most N, in order; the rest follows on the next turn", async () => {
    const t = fakeTarget();
    const b = new BatchingPublisher(t, 10);
    const all = Array.from({ length: 25 }, (_, i) => b.publish("c", String(i), `m${i}`));
    await Promise.all(all);
    expect(t.batches.map((x) => x.length)).toEqual([10, 10, 5]);
    expect(t.batches.flat().map((e) => e.body)).toEqual(Array.from({ length: 25 }, (_, i) => String(i)));
  });

  it("each publish settles with its own item's result", async () => {
    const t = fakeTarget((e) => e.body === "1");
    const b = new BatchingPublisher(t, 3);
    const r = await Promise.allSettled([b.publish("c", "0", undefined), b.publish("c", "1", undefined), b.publish("c", "2", undefined)]);
    expect(r.map((x) => x.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
  });
});
