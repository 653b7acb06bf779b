// `npm run capacity -- …`: `model` and `validate` are the capacity model (loadtest/sizing, built into dist/);
// anything else is the Artillery capacity run (run.mjs), with its own flags.
import { resolve } from "node:path";

const [cmd] = process.argv.slice(2);
if (cmd === "model" || cmd === "validate") await import(resolve(import.meta.dirname, "../../dist/loadtest/sizing/cli.js"));
else await import("./run.mjs");
