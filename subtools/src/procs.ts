// The processes of a sub-cluster run: forked Node processes (lean and ws engines, every target) talking
// over Node IPC, or native ones (subtools/native, Go) talking the same messages as JSON lines on
// stdin/stdout. The master sees one interface.
import { fork, spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { createInterface } from "node:readline";
import { dirname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { FromWorker, ToWorker } from "./ipc.js";

const WORKER_MAIN = fileURLToPath(new URL("./worker-main.js", import.meta.url));
const HERE = dirname(fileURLToPath(import.meta.url));
/** The repository root, from subtools/src or from its compiled copy in dist/subtools/src. */
const ROOT = resolve(HERE, HERE.split(sep).includes("dist") ? "../../.." : "../..");
/** Where scripts/setup.sh builds the native engine. */
export const NATIVE_BIN = process.env.SUB_NATIVE_BIN ?? join(ROOT, ".tools/bin/sub-native");

export interface WorkerProc {
  readonly child: ChildProcess;
  send(m: ToWorker): void;
  /** Still able to take messages. */
  alive(): boolean;
}

/** Why the native engine cannot run here, or null when it can. */
export function nativeMissing(): string | null {
  try {
    accessSync(NATIVE_BIN, constants.X_OK);
    return null;
  } catch {
    return `the native engine is not built (${NATIVE_BIN}): run \`npm run setup\` (needs Go) or build it with \`cd subtools/native && go build -o ${NATIVE_BIN} .\``;
  }
}

export function startProc(native: boolean, onMessage: (m: FromWorker) => void): WorkerProc {
  if (!native) {
    const child = fork(WORKER_MAIN, [], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    child.on("message", onMessage);
    return { child, send: (m) => { child.send(m); }, alive: () => child.connected };
  }
  const child = spawn(NATIVE_BIN, [], { stdio: ["pipe", "pipe", "inherit"] });
  let open = true;
  child.stdin!.on("error", () => { open = false; });
  child.on("exit", () => { open = false; });
  createInterface({ input: child.stdout! }).on("line", (line) => {
    let m: FromWorker;
    try { m = JSON.parse(line) as FromWorker; } catch { console.error(`sub-native: ${line}`); return; }
    onMessage(m);
  });
  return { child, send: (m) => { if (open) child.stdin!.write(JSON.stringify(m) + "\n"); }, alive: () => open && child.exitCode === null };
}
