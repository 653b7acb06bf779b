// What the gateway package ships: its code imports only its runtime dependencies (the load tools' and the
// tests' packages are devDependencies, so `npm ci --omit=dev` images stay free of them), and the published
// files are the gateway's own.
import { readdirSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  bin: Record<string, string>;
  files: string[];
};

function tsFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".ts"))
    .map((f) => join(dir, f));
}

/** The package a bare specifier names ("@scope/name/sub" → "@scope/name"), or null for relative and built-in ones. */
function packageOf(spec: string): string | null {
  if (spec.startsWith(".") || spec.startsWith("node:") || builtinModules.includes(spec)) return null;
  const parts = spec.split("/");
  return spec.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

describe("packaging", () => {
  it("packaging — gateway/src imports only the package's runtime dependencies", () => {
    const found = new Map<string, string>();
    for (const f of tsFiles("gateway/src")) {
      const text = readFileSync(join(ROOT, f), "utf8");
      // Static imports and re-exports (possibly over several lines), side-effect imports, dynamic imports.
      for (const m of text.matchAll(/^(?:import|export)\s[^;"]*?from\s*"([^"]+)"|^import\s*"([^"]+)"|\bimport\(\s*"([^"]+)"\s*\)/gm)) {
        const p = packageOf(m[1] ?? m[2] ?? m[3]!);
        if (p !== null && !found.has(p)) found.set(p, f);
      }
    }
    expect(found.size).toBeGreaterThan(3);
    const missing = [...found].filter(([p]) => !(p in pkg.dependencies)).map(([p, f]) => `${p} (${f})`);
    expect(missing).toEqual([]);
  });

  it("packaging — the load tools' packages are devDependencies, and the tools are not shipped as the package's commands", () => {
    for (const p of ["ws", "hdr-histogram-js"]) {
      expect(pkg.dependencies[p], p).toBeUndefined();
      expect(pkg.devDependencies[p], p).toBeDefined();
    }
    expect(Object.keys(pkg.bin)).toEqual(["fanout-gateway"]);
    for (const tools of ["!dist/subtools/", "!dist/pubtools/", "!dist/loadtest/"]) expect(pkg.files).toContain(tools);
  });
});
