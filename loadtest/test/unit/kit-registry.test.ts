import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { BENCHES, isBench, listing } from "../../kit/registry.js";
import { ROOT } from "../../kit/results.js";

const source = (script: string): string => join(ROOT, script.replace(/^dist\//, "").replace(/\.js$/, ".ts"));
/** A bench's entry file and the files of its own folder it imports (bench:jetstream declares its flags in options.ts). */
const withLocalImports = (file: string): string => {
  const text = readFileSync(file, "utf8");
  const local = [...text.matchAll(/from "\.\/([\w-]+)\.js"/g)].map((m) => readFileSync(join(dirname(file), `${m[1]}.ts`), "utf8"));
  return [text, ...local].join("\n");
};
const scripts = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;

describe("bench kit — registry", () => {
  it("registry — every bench's script exists, and each kit bench declares itself under its registry name", () => {
    for (const [name, b] of Object.entries(BENCHES)) {
      const file = source(b.script);
      expect(existsSync(file), file).toBe(true);
      if (b.kit) {
        expect(withLocalImports(file), file).toContain(`defineBench("${name}"`);
        expect(readFileSync(file, "utf8"), file).toMatch(/runBench\(BENCH/);
      }
    }
  });

  it("registry — every bench:* npm script is an alias of `npm run bench -- <name>` for a known bench, and every bench has one", () => {
    const aliases = Object.entries(scripts).filter(([k]) => k.startsWith("bench:"));
    for (const [k, v] of aliases) {
      expect(v, k).toBe(`npm run bench -- ${k.slice("bench:".length)}`);
      expect(isBench(k.slice("bench:".length)), k).toBe(true);
    }
    expect(aliases.map(([k]) => k.slice("bench:".length)).sort()).toEqual(Object.keys(BENCHES).sort());
    expect(scripts.bench).toMatch(/node dist\/loadtest\/kit\/cli\.js$/);
  });

  it("registry — --list names every bench with its summary", () => {
    const text = listing();
    for (const [name, b] of Object.entries(BENCHES)) expect(text).toMatch(new RegExp(`^${name} +${b.summary.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`, "m"));
    expect(isBench("nope")).toBe(false);
    expect(isBench("toString")).toBe(false);
  });
});
