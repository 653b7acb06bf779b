// What the delta tests against a real gateway share: the documents they publish and how they read what a
// `delta: "fossil"` subscription received.
import { DeltaBases } from "../client/src/deltas.js";
import type { Frame } from "../client/src/types.js";
import { nextScoreboard, scoreboard } from "../conformance/fossil-vectors.js";
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

/**
 * Two JSON documents of about `bytes` built to slow a Fossil encoder (issue 41): the base is `block` over and
 * over (every 16-byte window of it lands in one hash chain), the target the same text with a byte changed every
 * `period` bytes, so that each of the chain's 250 candidates matches a little and none far. fossil-delta's
 * createDelta spends 60 to 170 comparisons per byte on them (~80 ms of CPU for 64 KiB).
 */
export function slowDeltaPair(bytes = 65_536, block = "0123456789abcdef", period = 40): [base: string, target: string] {
  const text = block.repeat(Math.ceil((bytes - 16) / block.length)).slice(0, bytes - 16);
  let edited = "";
  for (let i = 0; i < text.length; i += period) edited += text.slice(i, i + period - 1) + "#";
  return [JSON.stringify({ t: text }), JSON.stringify({ t: edited.slice(0, text.length) })];
}
