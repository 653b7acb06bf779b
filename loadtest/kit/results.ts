// Where a bench's report goes, and the one way it is written: the default file in loadtest/results/, --out
// to put it elsewhere, nothing under --no-write, and nothing under --quick unless --out asks for it (a quick
// run checks that the bench works; its numbers are not results).
import { appendFileSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";

/** The repository: this file runs from dist/loadtest/kit (benches) and from loadtest/kit (unit tests). */
export const ROOT = resolve(import.meta.dirname.replace(/[/\\](dist[/\\])?loadtest[/\\]kit$/, ""));
export const RESULTS_DIR = resolve(ROOT, "loadtest/results");

export type WriteFlags = { out?: string | undefined; quick?: boolean; "no-write"?: boolean };

/** The report's path for these flags, or undefined when this run writes none. `file` is relative to loadtest/results. */
export function reportPath(flags: WriteFlags, file: string): string | undefined {
  if (flags["no-write"]) return undefined;
  if (flags.out) return resolve(flags.out);
  return flags.quick ? undefined : resolve(RESULTS_DIR, file);
}

/** A path next to the report with another extension (`x.md` → `x.json`). */
export const sibling = (path: string, ext: string): string => path.replace(/\.[a-z]+$/, "") + ext;

const shown = (path: string): string => (path.startsWith(ROOT) ? relative(ROOT, path) : path);

/** Writes (replaces) a report file and says where, on stderr. */
export function writeReport(path: string, text: string | Uint8Array): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  process.stderr.write(`report written to ${shown(path)}\n`);
}

/** Appends a section to a results file that keeps one section per run, creating it with a heading first. */
export function appendSection(path: string, heading: string, section: string): void {
  mkdirSync(dirname(path), { recursive: true });
  if (!existsSync(path)) writeFileSync(path, `${heading}\n`);
  appendFileSync(path, `\n${section}\n`);
  process.stderr.write(`appended to ${shown(path)}\n`);
}

/** The command that reproduces a run, for the report's first line. */
export const commandLine = (bench: string, argv: readonly string[]): string =>
  `npm run bench -- ${bench}${argv.length ? ` ${argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(" ")}` : ""}`;
