// Writes gateway/src/protocol/codes.json, the wire error and close codes as data for SDKs in any language
// (see codes-file.ts). Run by `npm run build` after tsc, from the compiled gateway.
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { codesFile } = await import(join(root, "dist/gateway/src/protocol/codes-file.js"));
writeFileSync(join(root, "gateway/src/protocol/codes.json"), codesFile());
