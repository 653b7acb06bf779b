import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { settingsTable } from "../../src/config/config.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

/** The docs checked: the front door, docs/, the gateway's, the load tests' and tools', deploy/, and the benchmark history. */
function docFiles(): string[] {
  const md = (dir: string) =>
    readdirSync(join(ROOT, dir))
      .filter((f) => f.endsWith(".md"))
      .map((f) => join(dir, f));
  return ["README.md", ...md("docs"), ...md("gateway"), ...md("loadtest"), "loadtest/results/history.md", "deploy/README.md", "subtools/README.md"];
}

/** The text outside fenced code blocks, line by line (fenced lines become empty: line numbers stay right). */
function prose(text: string): string[] {
  let fenced = false;
  return text.split("\n").map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return "";
    }
    return fenced ? "" : line;
  });
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
export function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose(text)) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const plain = m[1]!.replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1");
    const base = plain
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

export type BrokenLink = { file: string; line: number; target: string; why: string };

/**
 * Every relative link of a Markdown file (outside code) that does not resolve: the file or folder is
 * missing, or the anchor names no heading of the Markdown file it points into.
 */
export function brokenLinks(file: string, text: string, exists: (p: string) => boolean, read: (p: string) => string): BrokenLink[] {
  const out: BrokenLink[] = [];
  prose(text).forEach((raw, i) => {
    const line = raw.replace(/`[^`]*`/g, "");
    for (const m of line.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
      const [path, anchor] = target.split("#", 2) as [string, string | undefined];
      const resolved = path === "" ? file : join(dirname(file), decodeURIComponent(path));
      if (!exists(resolved)) {
        out.push({ file, line: i + 1, target, why: `${resolved} does not exist` });
        continue;
      }
      if (anchor !== undefined && resolved.endsWith(".md") && !anchorsOf(read(resolved)).has(anchor))
        out.push({ file, line: i + 1, target, why: `${resolved} has no heading #${anchor}` });
    }
  });
  return out;
}

const onDisk = (p: string) => existsSync(join(ROOT, p));
const fromDisk = (p: string) => readFileSync(join(ROOT, p), "utf8");
const scriptsOf = (pkg: string): Set<string> => new Set(Object.keys((JSON.parse(fromDisk(pkg)) as { scripts?: Record<string, string> }).scripts ?? {}));

describe("docs — links, commands and generated tables", () => {
  it("docs — the checker finds a missing file and a missing anchor (and passes good links)", () => {
    const files: Record<string, string> = { "a/x.md": "# Title\n\n## Two words: here\n", "a/y.md": "" };
    const doc = [
      "[ok](x.md#two-words-here) [ok](#self) [web](https://example.com/nope) `[code](nowhere.md)`",
      "[gone](missing.md) [bad anchor](x.md#nope)",
      "```",
      "[in a fence](missing-too.md)",
      "```",
      "## Self",
    ].join("\n");
    const found = brokenLinks(
      "a/y.md",
      doc,
      (p) => p in files,
      (p) => (p === "a/y.md" ? doc : files[p]!),
    );
    expect(found.map((b) => [b.line, b.target])).toEqual([
      [2, "missing.md"],
      [2, "x.md#nope"],
    ]);
  });

  it("docs — GitHub anchors: code spans and punctuation dropped, repeats numbered", () => {
    const a = anchorsOf("## `sub` — a server-side subscription started\n## `npm run compare:peers`: other servers\n## Limits\n## Limits\n");
    expect([...a]).toEqual(["sub--a-server-side-subscription-started", "npm-run-comparepeers-other-servers", "limits", "limits-1"]);
  });

  it("docs — every relative link resolves (file, and heading when it names one)", () => {
    const files = docFiles();
    expect(files.length).toBeGreaterThan(8);
    const broken = files.flatMap((f) => brokenLinks(f, fromDisk(f), onDisk, fromDisk));
    expect(broken.map((b) => `${b.file}:${b.line} ${b.target}: ${b.why}`)).toEqual([]);
  });

  it("docs — every `npm run X` and `npm start|test` named exists in package.json (root, or loadtest/ for its docs)", () => {
    const root = scriptsOf("package.json");
    const loadtest = scriptsOf("loadtest/package.json");
    const missing: string[] = [];
    let named = 0;
    for (const f of docFiles()) {
      const text = fromDisk(f);
      for (const m of text.matchAll(/\bnpm (?:run ([a-z][\w:-]*)|(start|test)\b)/g)) {
        const script = m[1] ?? m[2]!;
        named++;
        const ok = root.has(script) || (relative("loadtest", f).startsWith("..") ? false : loadtest.has(script));
        if (!ok) missing.push(`${f}: npm run ${script}`);
      }
    }
    expect(named).toBeGreaterThan(20);
    expect(missing).toEqual([]);
  });

  it("docs — the settings tables in docs/operations.md are the ones the code prints, one per section (npm run docs:settings writes them)", () => {
    const ops = fromDisk("docs/operations.md");
    const m = /<!-- settings-table:[^\n]*-->\n([\s\S]*?)\n<!-- \/settings-table -->/.exec(ops);
    expect(m?.[1]).toBe(settingsTable());
  });

  it("docs — the commands .ci/run runs are the test commands the README gives: the fast loop, then the long tier", () => {
    const commands = fromDisk(".ci/run")
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l !== "" && !l.startsWith("#") && !/^(set|cd)\b/.test(l));
    expect(commands).toEqual(["npm test", "npm run test:long"]);
    const readmeShell = [...fromDisk("README.md").matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((b) => b[1]!.split("\n"));
    for (const c of commands) expect(readmeShell.some((l) => l.split("#")[0]!.trim() === c)).toBe(true);
  });

  it("docs — the source layout's layers in docs/architecture.md are the lint rule's (scripts/eslint/layers.js)", () => {
    const decl = /export const LAYERS = (\[[\s\S]*?\]);\n/.exec(fromDisk("scripts/eslint/layers.js"));
    const layers = JSON.parse(decl![1]!.replace(/,(\s*\])/g, "$1")) as string[][];
    const rankInLint = new Map(layers.flatMap((names, i) => names.map((n) => [n, i + 1] as const)));
    const documented = new Map<string, number>();
    for (const m of fromDisk("docs/architecture.md").matchAll(/^\| (\d+) \| ([^|]+) \|/gm))
      for (const name of m[2]!.matchAll(/`([\w.-]+?)\/?`/g)) documented.set(name[1]!, Number(m[1]));
    expect([...documented].filter(([n, rank]) => rankInLint.get(n) !== rank)).toEqual([]);
    const folders = [...rankInLint.keys()].filter((n) => !n.endsWith(".ts"));
    expect(folders.filter((n) => !documented.has(n))).toEqual([]);
  });

  it("docs — every fanout_* metric in docs/operations.md is made by the gateway", () => {
    const src = (dir: string): string[] =>
      readdirSync(join(ROOT, dir)).flatMap((f) => {
        const p = join(dir, f);
        return statSync(join(ROOT, p)).isDirectory() ? src(p) : p.endsWith(".ts") ? [fromDisk(p)] : [];
      });
    const made = new Set(src("gateway/src").flatMap((t) => [...t.matchAll(/name: "(fanout_[a-z_]+)"/g)].map((m) => m[1]!)));
    const named = new Set([...fromDisk("docs/operations.md").matchAll(/\bfanout_[a-z_]+/g)].map((m) => m[0].replace(/_bucket$/, "")));
    expect(named.size).toBeGreaterThan(20);
    expect([...named].filter((n) => !made.has(n))).toEqual([]);
    // and every metric the gateway makes is listed
    expect([...made].filter((n) => !named.has(n))).toEqual([]);
  });
});
