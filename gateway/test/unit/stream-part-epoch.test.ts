// StreamPart notices a recreated stream (a new epoch) from the creation advisory, and asks the stream's state
// again when that read fails, so a slow server cannot make a worker miss the new epoch.
import { afterEach, describe, expect, it, vi } from "vitest";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { StreamPart, type PartOptions } from "../../src/broker/jetstream/stream-part.js";
import type { Logger } from "../../src/log.js";

type Callback = (err: Error | null, m: unknown) => void;

/** A connection whose subscriptions are callbacks the test calls, and a manager whose stream info it scripts. */
function fakes(answers: (() => string)[]) {
  const subs = new Map<string, Callback>();
  const nc = {
    subscribe: (subject: string, o: { callback: Callback }) => {
      subs.set(subject, o.callback);
      return { unsubscribe: () => undefined };
    },
    isClosed: () => false,
  } as unknown as NatsConnection;
  let reads = 0;
  const jsm = {
    streams: {
      info: async () => {
        const answer = answers[Math.min(reads++, answers.length - 1)] as () => string;
        return { created: answer(), config: { num_replicas: 1 }, state: { first_seq: 1, last_seq: 10 } };
      },
    },
  } as unknown as JetStreamManager;
  const logs: string[] = [];
  const log = { warn: (_o: unknown, m: string) => logs.push(m), debug: () => undefined, info: () => undefined, error: () => undefined } as unknown as Logger;
  const epochs: string[] = [];
  const opts = {
    livePrefix: "live",
    log,
    durable: {},
    liveHoldLimit: 100,
    onEpoch: (_s: string, e: string) => epochs.push(e),
  } as unknown as PartOptions;
  const part = new StreamPart(nc, {} as JetStreamClient, jsm, { stream: "S", subjectPrefix: "ch", resumeWindowMs: 0 }, opts);
  const advise = () => subs.get("$JS.EVENT.ADVISORY.STREAM.CREATED.S")?.(null, {});
  return { part, advise, logs, epochs, reads: () => reads };
}

const fail = () => {
  throw new Error("timeout");
};

describe("StreamPart — a recreated stream's epoch", () => {
  afterEach(() => void vi.useRealTimers());

  it("a creation advisory with a new epoch restarts the feeds and tells onEpoch", async () => {
    const f = fakes([() => "e1", () => "e2"]);
    await vi.waitFor(() => expect(f.part.epoch).toBe("e1"));
    f.advise();
    await vi.waitFor(() => expect(f.epochs).toEqual(["e2"]));
    expect(f.logs.filter((m) => m.startsWith("stream was recreated"))).toHaveLength(1);
  });

  it("a failed state read after the advisory is asked again until it answers", async () => {
    vi.useFakeTimers();
    const f = fakes([() => "e1", fail, fail, fail, () => "e2"]);
    await vi.advanceTimersByTimeAsync(0);
    expect(f.part.epoch).toBe("e1");
    f.advise();
    await vi.advanceTimersByTimeAsync(0);
    expect(f.epochs).toEqual([]);
    expect(f.logs.filter((m) => m.startsWith("stream state unavailable"))).toHaveLength(1);
    // 250 ms, 500 ms, 1 s: the fourth read after the advisory answers with the new epoch.
    await vi.advanceTimersByTimeAsync(250 + 500 + 1_000);
    expect(f.epochs).toEqual(["e2"]);
    expect(f.reads()).toBe(5);
    // Nothing is pending: no further read comes.
    await vi.advanceTimersByTimeAsync(60_000);
    expect(f.reads()).toBe(5);
  });

  it("gives up after six retries, and a close cancels a pending one", async () => {
    vi.useFakeTimers();
    const f = fakes([() => "e1", fail]);
    await vi.advanceTimersByTimeAsync(0);
    f.advise();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(f.reads()).toBe(1 + 1 + 6);
    const g = fakes([() => "e1", fail]);
    await vi.advanceTimersByTimeAsync(0);
    g.advise();
    await vi.advanceTimersByTimeAsync(0);
    g.part.close();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(g.reads()).toBe(2);
  });
});
