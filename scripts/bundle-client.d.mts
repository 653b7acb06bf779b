import type { BuildOptions } from "esbuild";

/** esbuild options of the browser bundle (scripts/bundle-client.mjs). */
export declare const BUNDLE_OPTIONS: BuildOptions;
