// uWebSockets.js builds that do not load, made from the installed one (the "uws-alt" devDependency) in a
// temporary folder, for the tests of what the gateway says then. Each is a path to pass as UWS_MODULE.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

/** The binary uWS.js picks for this process: uws_<platform>_<arch>_<ABI>.node. */
export const UWS_BINARY = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;

/** The glibc version at run time, undefined on other C libraries. */
export const GLIBC = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime;

/** A copy of the installed build whose binary for this Node is changed by `change`. */
function copyWith(change: (binary: Buffer) => Buffer): string {
  const src = dirname(createRequire(import.meta.url).resolve("uws-alt")); // its uws.js sits at the package root
  const dir = join(mkdtempSync(join(tmpdir(), "fgw-uws-")), "uws-build");
  cpSync(src, dir, { recursive: true });
  const bin = join(dir, UWS_BINARY);
  writeFileSync(bin, change(readFileSync(bin)));
  return dir;
}

/**
 * A build whose binary asks for GLIBC_2.99, as a binary built on a newer system does (the Node 24 builds ask for
 * GLIBC_2.38): one version requirement of the binary is renamed, so the dynamic linker refuses it.
 */
export function buildNeedingNewerGlibc(): string {
  return copyWith((b) => {
    const at = b.indexOf("GLIBC_2.27\0");
    if (at < 0) throw new Error(`${UWS_BINARY} does not require GLIBC_2.27: pick another version to rename`);
    Buffer.from("GLIBC_2.99\0").copy(b, at);
    return b;
  });
}

/** A build whose binary is cut to nothing (a broken download). */
export function buildWithTruncatedBinary(): string {
  return copyWith(() => Buffer.alloc(0));
}

/** A package that exports a uWS-shaped API written in JavaScript (what a build's pure-JS fallback is). */
export function pureJsBuild(): string {
  const dir = join(mkdtempSync(join(tmpdir(), "fgw-uws-")), "uws-js");
  mkdirSync(dir);
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "uws-js", version: "0.0.0", main: "index.js" }));
  writeFileSync(join(dir, "index.js"), "module.exports = { App() { return {}; }, SSLApp() { return {}; } };\n");
  return dir;
}
