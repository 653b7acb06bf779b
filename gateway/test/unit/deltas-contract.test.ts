// The server's delta rules (fanout/deltas.ts) and the SDK's bases (client/src/deltas.ts) together, in
// process: whatever happens — gaps, resumes, late repairs, a recreated stream, frames lost on the way —
// the client never shows data other than what was published, and asks to resubscribe only when a frame
// the server sent did not arrive.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ChannelDeltas, DEFAULT_DELTA_LIMITS, DeltaSubscription } from "../../src/fanout/deltas.js";
import { deltaFrame, msgFrame } from "../../src/protocol/serialize.js";
import { DeltaBases } from "../../client/src/deltas.js";
import type { Frame } from "../../client/src/types.js";

const CHANNELS = ["s.a", "s.b", "s.c"] as const;
const PATTERN = "s.*";

type Step =
  { kind: "msg"; channel: number; edit: number; to: "sub" | "lost" | "other" } | { kind: "late"; channel: number } | { kind: "resume" } | { kind: "recreate" };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({
      kind: fc.constant("msg" as const),
      channel: fc.nat(2),
      edit: fc.nat(1_000),
      to: fc.constantFrom("sub", "sub", "sub", "sub", "other", "lost"),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("late" as const), channel: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("resume" as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("recreate" as const) }) },
);

/** A channel's document after `edit`: a few fields change, most stay. */
const documentOf = (channel: string, seq: number, edit: number): string =>
  JSON.stringify({
    channel,
    seq,
    score: [edit % 7, edit % 5],
    note: "é".repeat(edit % 3),
    players: Array.from({ length: 12 }, (_, i) => ({ id: i, rating: i === edit % 12 ? edit : i })),
  });

/** Plays the steps; returns how many deltas and resubscribes the client saw. */
function play(steps: readonly Step[], lossless: boolean): { deltas: number; resubscribes: number } {
  const deltas = new ChannelDeltas(DEFAULT_DELTA_LIMITS);
  const sub = new DeltaSubscription();
  const client = new DeltaBases();
  const published: { channel: string; seq: number; payload: string }[] = [];
  let seq = 0;
  const seen = { deltas: 0, resubscribes: 0 };
  const restart = () => {
    sub.restart();
    client.reset();
  };
  const send = (channel: string, s: number, payload: string, lost: boolean) => {
    const m = deltas.next(channel, s, Buffer.from(payload));
    const kind = sub.next(m);
    if (lost) return;
    const text =
      kind === "delta"
        ? deltaFrame({ channel, pattern: PATTERN, seq: s, ts: 1 }, m.baseSeq, m.delta()!).toString("utf8")
        : msgFrame({ channel, pattern: PATTERN, seq: s, ts: 1 }, Buffer.from(payload)).toString("utf8");
    if (kind === "delta") seen.deltas++;
    const got = client.receive(JSON.parse(text) as Frame, text);
    if (got.ok) expect(got.data).toEqual(JSON.parse(payload));
    else {
      seen.resubscribes++;
      restart(); // the SDK unsubscribes and subscribes again from its position
    }
  };
  for (const st of steps) {
    if (st.kind === "msg") {
      const channel = CHANNELS[st.channel]!;
      const payload = documentOf(channel, ++seq, st.edit);
      published.push({ channel, seq, payload });
      if (st.to === "other")
        deltas.next(channel, seq, Buffer.from(payload)); // another subscription's feed
      else send(channel, seq, payload, st.to === "lost" && !lossless);
    } else if (st.kind === "late") {
      const old = published.filter((p) => p.channel === CHANNELS[st.channel]).at(-2);
      if (old) send(old.channel, old.seq, old.payload, false);
    } else if (st.kind === "resume") restart();
    else {
      deltas.clear();
      restart();
      seq = 0;
      published.length = 0;
    }
  }
  return seen;
}

describe("deltas contract — server rules and SDK bases together", () => {
  it("deltas contract — the client shows exactly the published data, and resubscribes only after a lost frame", () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 80 }), (steps) => {
        expect(play(steps, true).resubscribes).toBe(0);
        play(steps, false); // with losses: never wrong data (asserted inside), resubscribes allowed
      }),
      { numRuns: 300 },
    );
  });

  it("deltas contract — a steady channel is deltas after its first message, and a lost frame costs one resubscribe", () => {
    const steady: Step[] = Array.from({ length: 20 }, (_, i) => ({ kind: "msg", channel: 0, edit: i, to: i === 10 ? "lost" : "sub" }));
    expect(play(steady, true)).toEqual({ deltas: 19, resubscribes: 0 });
    // Message 11 is a delta against 10, which never arrived: the client asks to resubscribe, and after the
    // resubscribe the next message is full again.
    expect(play(steady, false)).toEqual({ deltas: 17, resubscribes: 1 });
  });
});
