import { readFileSync } from "node:fs";
import { applyDelta } from "fossil-delta";
import { describe, expect, it } from "vitest";
import { fossilVectors, vectorsText, type FossilBroken, type VectorBytes } from "../fossil-vectors.js";

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

  it("fossil vectors — each refusal has one fault, the one its `why` names: the library's reason for refusing it is that fault", () => {
    const { broken } = fossilVectors();
    const refusal = (b: FossilBroken): string => {
      try {
        applyDelta(bytes(b.base), bytes(b.delta));
      } catch (e) {
        return (e as Error).message;
      }
      return "accepted";
    };
    // fossil-delta 2.0.0's messages (pinned in package.json): a truncated delta is refused wherever the cut falls.
    const says: Record<string, RegExp> = {
      checksum: /^bad checksum$/,
      copy: /^copy extends past end of input$/,
      insert: /^(insert count exceeds size of delta|unterminated delta)$/,
      size: /^(generated size does not match predicted size|copy exceeds output file size)$/,
      header: /^size integer not terminated/,
      operator: /^unknown delta operator$/,
      garbage: /^size integer not terminated/,
      empty: /^(size integer not terminated|unterminated delta)/,
      truncated: /^(size integer not terminated|unterminated delta|copy command not terminated|unknown delta operator)/,
    };
    for (const b of broken) expect(refusal(b), b.name).toMatch(says[b.why] ?? /no such why/);
    expect(new Set(broken.map((b) => b.name)).size).toBe(broken.length);
    expect(new Set(broken.map((b) => b.why))).toEqual(new Set(Object.keys(says)));
  });

  it("fossil vectors — truncated deltas are strict prefixes of a good delta on its base, and checksum refusals apply command by command", () => {
    const { cases, broken } = fossilVectors();
    const hex = (v: VectorBytes): string => Buffer.from(bytes(v)).toString("hex");
    const truncated = broken.filter((b) => b.why === "truncated");
    expect(truncated.length).toBeGreaterThanOrEqual(6);
    for (const b of truncated) {
      const whole = cases.find((c) => hex(c.base) === hex(b.base) && hex(c.delta).startsWith(hex(b.delta)));
      expect(whole && bytes(b.delta).length < bytes(whole.delta).length, b.name).toBe(true);
    }
    const scoreboard = cases.find((c) => c.name.startsWith("scoreboard"))!;
    const checksum = broken.filter((b) => b.why === "checksum");
    expect(checksum.length).toBeGreaterThanOrEqual(3);
    for (const b of checksum) {
      const unchecked = applyDelta(bytes(b.base), bytes(b.delta), { verifyChecksum: false });
      expect(unchecked.length, b.name).toBe(bytes(scoreboard.target).length); // the size line holds: only the checksum refuses it
    }
  });
});
