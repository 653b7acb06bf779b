import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canPublish, canSubscribe, parseChannelsClaim, patternCovers } from "../../src/auth/permissions.js";
import { checkPattern, matches } from "../../src/protocol/channel.js";

/** All patterns over `tokens` (plus `*`, and `>` last) of 1..maxLen tokens. */
function allPatterns(tokens: string[], maxLen: number): string[] {
  const out: string[] = [];
  const walk = (prefix: string[]): void => {
    if (prefix.length > 0) out.push(prefix.join("."));
    if (prefix.length === maxLen) return;
    for (const t of [...tokens, "*"]) walk([...prefix, t]);
    out.push([...prefix, ">"].join("."));
  };
  walk([]);
  return out;
}
function allChannels(tokens: string[], maxLen: number): string[] {
  let level = tokens.map((t) => [t]);
  const out: string[] = [];
  for (let n = 1; n <= maxLen; n++) {
    out.push(...level.map((l) => l.join(".")));
    level = level.flatMap((l) => tokens.map((t) => [...l, t]));
  }
  return out;
}

// Random patterns over a small alphabet, so that literals collide often.
const token = fc.constantFrom("a", "b", "c", "*");
const pattern = fc
  .tuple(fc.array(token, { minLength: 0, maxLength: 5 }), fc.boolean())
  .map(([ts, gt]) => (ts.length === 0 || gt ? [...ts, ">"] : ts).join("."));

describe("permissions — pattern coverage", () => {
  it("examples from the spec", () => {
    expect(patternCovers("orders.*", "orders.eu")).toBe(true);
    expect(patternCovers("orders.*", "orders.>")).toBe(false);
    expect(patternCovers("orders.*", "orders.*")).toBe(true);
    expect(patternCovers("orders.>", "orders.*")).toBe(true);
    expect(patternCovers("orders.>", "orders.eu.x")).toBe(true);
    expect(patternCovers("orders.>", "orders.>")).toBe(true);
    expect(patternCovers("orders.>", "orders")).toBe(false);
    expect(patternCovers(">", "anything.*.>")).toBe(true);
    expect(patternCovers("*.eu", "*.eu")).toBe(true);
    expect(patternCovers("orders.eu", "orders.*")).toBe(false);
    expect(patternCovers("*.>", ">")).toBe(false);
  });

  it("equals the brute-force subset relation over every pattern pair of a small universe", () => {
    const patterns = allPatterns(["a", "b"], 3);
    const channels = allChannels(["a", "b", "z"], 5); // z: a token no pattern names; 5 > longest pattern
    expect(patterns.every((p) => checkPattern(p).ok)).toBe(true);
    let checked = 0;
    for (const perm of patterns) {
      for (const q of patterns) {
        const subset = channels.every((c) => !matches(q, c) || matches(perm, c));
        expect(patternCovers(perm, q), `${perm} ⊇ ${q}`).toBe(subset);
        checked++;
      }
    }
    expect(checked).toBe(patterns.length ** 2);
  });

  it("property: covers ⇒ every channel of the pattern matches the permission; ¬covers ⇒ a witness channel escapes", () => {
    fc.assert(
      fc.property(pattern, pattern, fc.array(fc.constantFrom("a", "b", "c", "zz"), { minLength: 1, maxLength: 8 }), (perm, q, ch) => {
        const channel = ch.join(".");
        if (patternCovers(perm, q) && matches(q, channel)) expect(matches(perm, channel)).toBe(true);
        if (!patternCovers(perm, q)) {
          // Instantiate q with a token perm never names (zz), `>` expanded to 1..(perm length + 1) tokens.
          const base = q.split(".").map((t) => (t === "*" ? "zz" : t));
          const witnesses =
            base.at(-1) === ">"
              ? Array.from({ length: perm.split(".").length + 1 }, (_, k) => [...base.slice(0, -1), ...Array(k + 1).fill("zz")].join("."))
              : [base.join(".")];
          expect(witnesses.some((w) => matches(q, w) && !matches(perm, w))).toBe(true);
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it("a pattern covers itself, and > covers every pattern", () => {
    fc.assert(
      fc.property(pattern, (p) => patternCovers(p, p) && patternCovers(">", p)),
      { numRuns: 2_000 },
    );
  });
});

describe("permissions — claims", () => {
  it("reads the channels claim; missing means no rights; malformed is refused", () => {
    const p = parseChannelsClaim({ sub: ["orders.*", "news.>"], pub: ["orders.eu"] });
    expect(typeof p).toBe("object");
    if (typeof p === "string") return;
    expect(canSubscribe(p, "orders.eu")).toBe(true);
    expect(canSubscribe(p, "orders.>")).toBe(false);
    expect(canSubscribe(p, "news.a.b")).toBe(true);
    expect(canPublish(p, "orders.eu")).toBe(true);
    expect(canPublish(p, "orders.us")).toBe(false);
    const none = parseChannelsClaim(undefined);
    expect(typeof none !== "string" && !canSubscribe(none, "x") && !canPublish(none, "x")).toBe(true);
    expect(parseChannelsClaim(["orders.*"])).toMatch(/must be an object/);
    expect(parseChannelsClaim({ sub: "orders.*" })).toMatch(/list/);
    expect(parseChannelsClaim({ sub: ["orders..x"] })).toMatch(/bad pattern/);
    expect(parseChannelsClaim({ pub: [42] })).toMatch(/bad pattern/);
  });

  it("channels.auto — server-side subscriptions must lie within channels.sub", () => {
    expect(parseChannelsClaim({ sub: ["inbox.a.>"], auto: ["inbox.a.>", "inbox.a.*", "inbox.a.>"] })).toMatchObject({ auto: ["inbox.a.>", "inbox.a.*"] });
    expect(parseChannelsClaim({ sub: ["inbox.a.*"], auto: ["inbox.a.>"] })).toMatch(/channels.auto lists inbox.a.>, which channels.sub does not allow/);
    expect(parseChannelsClaim({ sub: [">"], auto: "x" })).toMatch(/channels.auto must be a list/);
    expect(parseChannelsClaim({ sub: [">"], auto: ["a..b"] })).toMatch(/bad pattern/);
    expect(parseChannelsClaim({ sub: [">"] })).not.toHaveProperty("auto");
  });
});
