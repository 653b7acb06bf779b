// The gateway's CLI as one ES module (dist/gateway/fanout-gateway.mjs, the package's `bin`), bundled by esbuild
// from what tsc compiled (dist/gateway/src). A process that loads one file instead of about 150 of ours and a
// few hundred of its dependencies starts in about half the CPU time: every worker, at every start and restart.
// uWebSockets.js stays outside (a native addon, loaded by uws.ts from the package or UWS_MODULE). Run by
// `npm run build` after tsc.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const SERVER_BUNDLE = "dist/gateway/fanout-gateway.mjs";

await build({
  entryPoints: [join(root, "dist/gateway/src/cli.js")],
  outfile: join(root, SERVER_BUNDLE),
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["uWebSockets.js"],
  // Dependencies written as CommonJS call require() for Node's modules: give the module one.
  banner: { js: "import { createRequire as __fgwCreateRequire } from 'node:module';\nconst require = __fgwCreateRequire(import.meta.url);" },
  // Stack traces name the TypeScript sources with NODE_OPTIONS=--enable-source-maps.
  sourcemap: "linked",
  sourcesContent: false,
  legalComments: "linked",
  logLevel: "warning",
});
