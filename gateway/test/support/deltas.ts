// What the delta tests against a real gateway share: the documents they publish and how they read what a
// `delta: "fossil"` subscription received.
import { DeltaBases } from "../../client/src/deltas.js";
import type { Frame } from "../../client/src/types.js";
import { nextScoreboard, scoreboard } from "../../conformance/fossil-vectors.js";
import type { TestClient } from "./ws-client.js";

/** `n` scoreboards (about 2 KB of JSON each, a few fields changed from one to the next), as published. */
export function scoreboards(n: number, seed = 7): unknown[] {
  const rnd = () => ((seed = (seed * 16_807) % 2_147_483_647) - 1) / 2_147_483_646;
  let doc = scoreboard();
  return Array.from({ length: n }, () => (doc = nextScoreboard(doc, rnd)));
}

/** What the application sees: each message made whole by the SDK's bases; throws on one it could not apply. */
export function applied(c: TestClient, bases = new DeltaBases()): unknown[] {
  return c.msgs.map((m, i) => {
    const got = bases.receive(m as Frame, c.raws[i]!);
    if (!got.ok) throw new Error(`seq ${m.seq}: ${got.reason}`);
    return got.data instanceof Uint8Array ? JSON.parse(Buffer.from(got.data).toString("utf8")) : got.data;
  });
}

/** The messages received, `F` full and `d` delta: "Fddd". */
export const kinds = (c: TestClient): string => c.msgs.map((m) => (m.delta === true ? "d" : "F")).join("");
