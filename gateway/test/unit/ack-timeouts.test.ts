// The warning of unacknowledged publishes (broker/jetstream/ack-timeouts.ts): one line per window, naming the
// stream, the subject, how many timed out and what JetStream said of the stream.
import { describe, expect, it } from "vitest";
import { AckTimeoutWarning } from "../../src/broker/jetstream/ack-timeouts.js";
import type { Logger } from "../../src/log.js";
import { waitFor } from "#testkit/wait.js";

type Line = { at: number; o: Record<string, unknown>; msg: string };

function recorder(): { log: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const log = { warn: (o: Record<string, unknown>, msg: string) => lines.push({ at: Date.now(), o, msg }) } as unknown as Logger;
  return { log, lines };
}

describe("ack timeouts — one warning per window, naming the stream", () => {
  it("many timeouts make one line with their count, the stream, the last subject and the stream's state; the next waits for the window", async () => {
    const { log, lines } = recorder();
    const w = new AckTimeoutWarning(
      log,
      (s) => (s.startsWith("ns.") ? "NS" : "MAIN"),
      async (stream) => ({ streamFound: stream === "MAIN", streamLastSeq: 7 }),
      200,
    );
    for (let i = 0; i < 5; i++) w.timedOut(`ev.a${i}`);
    await waitFor(() => lines.length === 1 || undefined, { what: "first warning" });
    expect(lines[0]!.o).toMatchObject({ stream: "MAIN", subject: "ev.a4", timedOut: 5, streamFound: true, streamLastSeq: 7 });
    w.timedOut("ns.x");
    w.timedOut("ns.y");
    await waitFor(() => lines.length === 2 || undefined, { what: "second warning" });
    expect(lines[1]!.o).toMatchObject({ stream: "NS", subject: "ns.y", timedOut: 2, streamFound: false });
    expect(lines[1]!.at - lines[0]!.at).toBeGreaterThanOrEqual(190);
    w.stop();
  });

  it("a failed look at the stream is named in the line instead of its state", async () => {
    const { log, lines } = recorder();
    const w = new AckTimeoutWarning(
      log,
      () => "MAIN",
      () => Promise.reject(new Error("timeout")),
      50,
    );
    w.timedOut("ev.a");
    await waitFor(() => lines.length === 1 || undefined, { what: "warning" });
    expect(lines[0]!.o).toMatchObject({ stream: "MAIN", timedOut: 1, lookFailed: "timeout" });
  });
});
