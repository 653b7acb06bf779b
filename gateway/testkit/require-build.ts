// Integration tests run the gateway's CLI and tools from dist/: without a build they fail here, at once and
// saying why, rather than each skipping or timing out on its own.
import { existsSync, statSync } from "node:fs";
import { CLI } from "./gateway.js";

export default function requireBuild(): void {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: integration tests run the built gateway; run \`npm run build\` first (npm test does)`);
  if (statSync(CLI).size === 0) throw new Error(`${CLI} is empty: run \`npm run build\``);
}
