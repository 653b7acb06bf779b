import { readFileSync } from "node:fs";
import { applyDelta } from "fossil-delta";
import { describe, expect, it } from "vitest";
import { fossilVectors, vectorsText, type VectorBytes } from "../fossil-vectors.js";

const committed = readFileSync(new URL("../vectors/fossil.json", import.meta.url), "utf8");
const bytes = (v: VectorBytes): Uint8Array => ("text" in v ? new TextEncoder().encode(v.text) : new Uint8Array(Buffer.from(v.base64, "base64")));

describe("fossil vectors — the shared delta vectors", () => {
  it("fossil vectors — the committed file is what the installed library makes now (else: npm run vectors:fossil)", () => {
    expect(committed).toBe(vectorsText(fossilVectors()));
  });

  it("fossil vectors — every case names its kind of change and the scoreboard delta is far smaller than the document", () => {
    const { cases } = fossilVectors();
    const scoreboard = cases.find((c) => c.name.startsWith("scoreboard"))!;
    expect(bytes(scoreboard.target).length).toBeGreaterThan(1_800);
    expect(bytes(scoreboard.delta).length).toBeLessThan(bytes(scoreboard.target).length / 5);
    expect(cases.filter((c) => !c.smaller).map((c) => c.name)).toEqual(["empty base", "empty target", "delta not smaller than the target"]);
    expect(cases.some((c) => "base64" in c.target)).toBe(true);
    const notUtf8 = cases.find((c) => c.name.includes("delta is not UTF-8"))!;
    expect(["text" in notUtf8.base, "text" in notUtf8.target, "base64" in notUtf8.delta]).toEqual([true, true, true]);
  });

  it("fossil vectors — the library applies every case and refuses every broken delta", () => {
    const { cases, broken } = fossilVectors();
    for (const c of cases) expect(Buffer.from(applyDelta(bytes(c.base), bytes(c.delta))).equals(bytes(c.target)), c.name).toBe(true);
    for (const b of broken) expect(() => applyDelta(bytes(b.base), bytes(b.delta)), b.name).toThrow();
  });
});
