import { createRequire } from "node:module";
import { ProcessError } from "./errors.js";

export type * from "uWebSockets.js";
import type * as UwsModule from "uWebSockets.js";

/**
 * Loads uWebSockets.js and refuses the package's silent fallback to its pure-JS server: the native binary
 * must be what got loaded, or the gateway exits with ERR_UWS_FALLBACK.
 */
export function loadUws(): typeof UwsModule {
  const require = createRequire(import.meta.url);
  // The package reports its fallback on console.warn/console.log; keep that text for our own error.
  const orig = { warn: console.warn, log: console.log };
  const warnings: string[] = [];
  console.warn = console.log = (...args: unknown[]) => {
    warnings.push(args.map(String).join(" "));
  };
  let uws: typeof UwsModule;
  try {
    uws = require("uWebSockets.js") as typeof UwsModule;
  } finally {
    console.warn = orig.warn;
    console.log = orig.log;
  }
  const nativeLoaded = Object.keys(require.cache).some((k) => /uWebSockets\.js[\\/].*\.node$/.test(k) || /uws_[a-z0-9_]+\.node$/.test(k));
  const isNative = nativeLoaded && /\[native code\]/.test(Function.prototype.toString.call(uws.App));
  if (!isNative) {
    throw new ProcessError(
      "ERR_UWS_FALLBACK",
      `uWebSockets.js native binary did not load for ${process.platform}-${process.arch} (Node ABI ${process.versions.modules}); ` +
        `it fell back to a slow pure-JS server, which the gateway refuses to run. ${warnings.join(" ").trim()}`,
    );
  }
  return uws;
}
