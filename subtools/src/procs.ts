// The processes of a sub-cluster run: forked Node processes (lean and ws engines, every target) talking
// over Node IPC, or native ones (subtools/native, Go) talking the same messages as JSON lines on
// stdin/stdout. The master sees one interface.
import { execFileSync, fork, spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants, existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { dirname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { FromWorker, ToWorker } from "./ipc.js";

const WORKER_MAIN = fileURLToPath(new URL("./worker-main.js", import.meta.url));
const HERE = dirname(fileURLToPath(import.meta.url));
/** The repository root, from subtools/src or from its compiled copy in dist/subtools/src. */
const ROOT = resolve(HERE, HERE.split(sep).includes("dist") ? "../../.." : "../..");
/** Where scripts/build-native.sh builds the native engine (SUB_NATIVE_BIN: a binary of your own). */
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
    return `the native engine is not built (${NATIVE_BIN}): it needs Go; build it with \`bash scripts/build-native.sh\``;
  }
}

/**
 * Builds the native engine on first use, or again when a source is newer (scripts/build-native.sh, run from
 * a checkout, into NATIVE_BIN); then says why it cannot run, or null.
 */
export function ensureNative(): string | null {
  const script = join(ROOT, "scripts/build-native.sh");
  if (existsSync(script)) {
    try {
      execFileSync("bash", [script], { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, SUB_NATIVE_BIN: NATIVE_BIN } });
    } catch {
      return nativeMissing() ?? `the native engine could not be rebuilt (${script} failed)`;
    }
  }
  return nativeMissing();
}

export function startProc(native: boolean, onMessage: (m: FromWorker) => void): WorkerProc {
  if (!native) {
    const child = fork(WORKER_MAIN, [], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    child.on("message", onMessage);
    return {
      child,
      send: (m) => {
        child.send(m);
      },
      alive: () => child.connected,
    };
  }
  const child = spawn(NATIVE_BIN, [], { stdio: ["pipe", "pipe", "inherit"] });
  let open = true;
  child.stdin!.on("error", () => {
    open = false;
  });
  child.on("exit", () => {
    open = false;
  });
  createInterface({ input: child.stdout! }).on("line", (line) => {
    let m: FromWorker;
    try {
      m = JSON.parse(line) as FromWorker;
    } catch {
      console.error(`sub-native: ${line}`);
      return;
    }
    onMessage(m);
  });
  return {
    child,
    send: (m) => {
      if (open) child.stdin!.write(JSON.stringify(m) + "\n");
    },
    alive: () => open && child.exitCode === null,
  };
}
