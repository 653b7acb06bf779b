// The client SDK as the gateway serves it (GET /client.js) and as the root package exports it
// (`fanout-gateway/client`): one minified ES module with its source map, bundled by esbuild from the
// @fanout-gateway/client sources, and that package's declarations beside it. Run by `npm run build` after
// the package's own build (tsc -p gateway/client/tsconfig.json), which made gateway/client/dist.
import { copyFileSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "dist/gateway/client");
const types = join(out, "types");

/** esbuild options of the browser bundle; the size budget test (gateway/client/test/size.test.ts) uses the same. */
export const BUNDLE_OPTIONS = {
  entryPoints: [join(root, "gateway/client/src/index.ts")],
  bundle: true,
  format: "esm",
  platform: "neutral",
  // The neutral platform reads no package fields by default: fossil-delta (the one dependency) has only `main`.
  mainFields: ["module", "main"],
  target: "es2022",
  minify: true,
  legalComments: "none",
};

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(types, { recursive: true });
  await build({ ...BUNDLE_OPTIONS, outfile: join(out, "client.js"), sourcemap: "external", sourcesContent: true, logLevel: "warning" });
  const built = join(root, "gateway/client/dist");
  for (const f of readdirSync(built)) if (f.endsWith(".d.ts")) copyFileSync(join(built, f), join(types, f));
}
