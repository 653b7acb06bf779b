// Writes the settings tables (one per config section) into docs/operations.md from the code, the one source
// of truth. Run by `npm run docs:settings` (which compiles first) after adding or changing a setting; the docs
// test (gateway/test/unit/docs.test.ts) fails while the committed tables differ from the code's.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const { settingsTable } = await import(resolve(root, "dist/gateway/src/config/config.js"));
const path = resolve(root, "docs/operations.md");
const text = readFileSync(path, "utf8");
const block = /(<!-- settings-table:[^\n]*-->\n)[\s\S]*?\n(<!-- \/settings-table -->)/;
if (!block.test(text)) throw new Error(`${path}: no <!-- settings-table: … --> … <!-- /settings-table --> block`);
const next = text.replace(block, (_, start, end) => `${start}${settingsTable()}\n${end}`);
if (next === text) console.log("docs/operations.md: settings tables already current");
else {
  writeFileSync(path, next);
  console.log("docs/operations.md: settings tables rewritten");
}
