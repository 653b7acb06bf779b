import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve, sep } from "node:path";
import { ConfigError, ProcessError } from "./errors.js";

export type * from "uWebSockets.js";
import type * as UwsModule from "uWebSockets.js";

/** The module loaded when UWS_MODULE is not set: the package.json dependency of that name. */
export const DEFAULT_UWS_MODULE = "uWebSockets.js";

let loaded: { name: string; uws: typeof UwsModule } | undefined;

/**
 * Loads uWebSockets.js — the module named by UWS_MODULE (a package name, such as an npm alias of another
 * build, or a path) — and refuses the package's silent fallback to its pure-JS server: the native binary must
 * be what got loaded, or the gateway exits with ERR_UWS_FALLBACK. A name that does not load exits with a
 * ConfigError naming UWS_MODULE. The first call picks the module; later calls without a name get the same one.
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
    throw new ConfigError("UWS_MODULE", `invalid UWS_MODULE (--uws-module): cannot load "${want}": ${(e as Error).message.split("\n")[0]}`);
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
    throw new ConfigError("UWS_MODULE", `invalid UWS_MODULE (--uws-module): "${want}" failed to load: ${(e as Error).message.split("\n")[0]}`);
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
  loaded = { name: want, uws };
  return uws;
}

/** The folder of the package.json nearest above a module's entry file (its package's root). */
function packageRoot(entry: string): string {
  for (let dir = dirname(entry); ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json"))) return dir;
    if (dirname(dir) === dir) return dirname(entry);
  }
}
