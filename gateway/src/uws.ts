import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve, sep } from "node:path";
import { ConfigError, ProcessError } from "./errors.js";

export type * from "uWebSockets.js";
import type * as UwsModule from "uWebSockets.js";

/** The module loaded when UWS_MODULE is not set: the package.json dependency of that name. */
export const DEFAULT_UWS_MODULE = "uWebSockets.js";

let loaded: { name: string; uws: typeof UwsModule; root: string } | undefined;

/**
 * Loads uWebSockets.js — the module named by UWS_MODULE (a package name, such as an npm alias of another
 * build, or a path) — and refuses a build without its native binary (some builds fall back to a pure-JS
 * server): the gateway exits with ERR_UWS_FALLBACK. A module whose binary fails to load exits with
 * ERR_UWS_LOAD and the loader's cause (a missing GLIBC version, no binary for this Node's ABI); a name that
 * cannot be found, with a ConfigError naming UWS_MODULE. The first call picks the module; later calls without
 * a name get the same one.
 */
export function loadUws(name?: string): typeof UwsModule {
  if (loaded && name === undefined) return loaded.uws;
  // A path is taken from the working directory; a package name is resolved from the gateway's own package.
  const want = name !== undefined && /^\.\.?([\\/]|$)/.test(name) ? resolve(name) : (name ?? DEFAULT_UWS_MODULE);
  if (loaded?.name === want) return loaded.uws;
  const require = createRequire(import.meta.url);
  let root: string;
  try {
    root = packageRoot(require.resolve(want));
  } catch (e) {
    throw new ConfigError("UWS_MODULE", `invalid UWS_MODULE (--uws-module): cannot load "${want}": ${loadFailureText((e as Error).message)}`);
  }
  // The package reports its fallback on console.warn/console.log; keep that text for our own error.
  const orig = { warn: console.warn, log: console.log };
  const warnings: string[] = [];
  console.warn = console.log = (...args: unknown[]) => {
    warnings.push(args.map(String).join(" "));
  };
  let uws: typeof UwsModule;
  try {
    uws = require(want) as typeof UwsModule;
  } catch (e) {
    throw new ProcessError(
      "ERR_UWS_LOAD",
      `uWebSockets.js ("${want}", UWS_MODULE) failed to load on Node ${process.version} (ABI ${process.versions.modules}, ${process.platform}-${process.arch}${glibcNote()}): ${loadFailureText((e as Error).message)}`,
      { cause: e },
    );
  } finally {
    console.warn = orig.warn;
    console.log = orig.log;
  }
  // A native addon from this package's own folder (not some other uWS build loaded before).
  const nativeLoaded = Object.keys(require.cache).some((k) => k.startsWith(root + sep) && k.endsWith(".node"));
  const isNative = nativeLoaded && typeof uws?.App === "function" && /\[native code\]/.test(Function.prototype.toString.call(uws.App));
  if (!isNative) {
    throw new ProcessError(
      "ERR_UWS_FALLBACK",
      `uWebSockets.js ("${want}") native binary did not load for ${process.platform}-${process.arch} (Node ABI ${process.versions.modules}); ` +
        `it fell back to a slow pure-JS server, which the gateway refuses to run. ${warnings.join(" ").trim()}`,
    );
  }
  loaded = { name: want, uws, root };
  return uws;
}

/** What the process runs on: reported at start and in `/v1/stats`. */
export type RuntimeInfo = {
  /** `process.version`, e.g. "v22.23.3". */
  node: string;
  /** The Node ABI the native binary was picked for (`process.versions.modules`, 127 for Node 22). */
  abi: string;
  /** The uWebSockets.js package loaded (name@version of its package.json), once loadUws() ran. */
  uws: string | undefined;
  /** The C library's version on glibc systems (uWS binaries need a minimum one). */
  glibc: string | undefined;
};

let glibc: { v: string | undefined } | undefined;

export function runtimeInfo(): RuntimeInfo {
  glibc ??= { v: glibcVersion() };
  return { node: process.version, abi: process.versions.modules, uws: loaded && packageId(loaded.root), glibc: glibc.v };
}

function packageId(root: string): string | undefined {
  try {
    const p = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { name?: string; version?: string };
    return `${p.name ?? "?"}@${p.version ?? "?"}`;
  } catch {
    return undefined;
  }
}

/**
 * A loader's error in one line: every line of it but the require stack. uWS.js puts the cause below its own
 * first line ("This version of uWS.js supports only…"), e.g. the dynamic linker's
 * "version `GLIBC_2.38' not found (required by …/uws_linux_x64_137.node)" or "Cannot find module
 * './uws_linux_x64_137.node'" for a Node it has no binary for.
 */
export function loadFailureText(message: string): string {
  const lines = message.split("\n").map((l) => l.trim());
  const stackAt = lines.indexOf("Require stack:");
  return (stackAt >= 0 ? lines.slice(0, stackAt) : lines).filter((l) => l !== "").join(" | ");
}

/** The glibc version at run time (what a binary's GLIBC_x.y requirement is measured against); undefined elsewhere. */
function glibcVersion(): string | undefined {
  return (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime;
}

function glibcNote(): string {
  const v = runtimeInfo().glibc;
  return v ? `, glibc ${v}` : "";
}

/** The folder of the package.json nearest above a module's entry file (its package's root). */
function packageRoot(entry: string): string {
  for (let dir = dirname(entry); ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json"))) return dir;
    if (dirname(dir) === dir) return dirname(entry);
  }
}
