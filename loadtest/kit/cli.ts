// `npm run bench -- <name> [flags]`: runs one bench as its own process (benches fork their own script as
// clients, so each must be the main module of its process); `--list` names them all.
import { execFileSync, spawn } from "node:child_process";
import { resolve } from "node:path";
import { BENCHES, isBench, listing, type Entry } from "./registry.js";
import { ROOT } from "./results.js";

const [name, ...rest] = process.argv.slice(2);
if (name === undefined || name === "--list" || name === "--help" || name === "-h") {
  process.stdout.write(`npm run bench -- <name> [flags]\n\n${listing()}`);
  process.exit(name === undefined ? 2 : 0);
}
if (!isBench(name)) {
  process.stderr.write(`no bench named ${JSON.stringify(name)}; npm run bench -- --list names them\n`);
  process.exit(2);
}
const entry: Entry = BENCHES[name];
const [setup, ...setupArgs] = entry.setup ?? [];
if (setup && !rest.includes("--help")) execFileSync(setup, setupArgs, { cwd: ROOT, stdio: "inherit" });
const child = spawn(process.execPath, [resolve(ROOT, entry.script), ...rest], { cwd: ROOT, stdio: "inherit" });
for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => child.kill(sig));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
