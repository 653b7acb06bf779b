#!/usr/bin/env node
import cluster from "node:cluster";
import * as nodeModule from "node:module";
import { ConfigError, GatewayError, ProcessError } from "./errors.js";
import type { Secrets } from "./config/secrets.js";
import { isFgwMessage, type ToPrimary, type ToWorker } from "./instance/ipc.js";

// Node 22.1+ keeps the compiled code of every module it loads on disk (NODE_COMPILE_CACHE, else a folder in
// the system's temporary directory) and reuses it at the next start: a worker restarted after a crash, and
// every worker of the next start, compile nothing again. Node 20 has no such cache (the function is missing).
(nodeModule as { enableCompileCache?: () => unknown }).enableCompileCache?.();

const USAGE = `fanout-gateway — WebSocket fan-out gateway on NATS JetStream

Usage: fanout-gateway [--flag value ...]   (every flag is also an env var)

Settings:
`;

/**
 * Each role loads only its own modules, after the compile cache is on: the primary never loads the workers'
 * (uWS, the hub, the doors), nor a worker the primary's (the stream watch, the events sender, the embedded servers).
 */
async function main(): Promise<void> {
  const { loadConfig, settingsTable, WORKER_SLOT_ENV } = await import("./config/config.js");
  let parsed;
  try {
    parsed = loadConfig(process.argv.slice(2), process.env);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`fanout-gateway: ${e.message}\n`);
      process.exit(1);
    }
    throw e;
  }
  if (parsed.help) {
    process.stdout.write(USAGE + settingsTable() + "\n");
    return;
  }
  if (parsed.configTable) {
    process.stdout.write(settingsTable() + "\n");
    return;
  }
  if (cluster.isPrimary) await (await import("./instance/primary.js")).runPrimary(parsed.config);
  else {
    // The secrets are asked for while the worker's modules load.
    const modules = Promise.all([import("./instance/worker.js"), import("./config/secrets.js")]);
    const secrets = await secretsFromPrimary();
    const [{ runWorker }, { withSecrets }] = await modules;
    await runWorker(withSecrets(parsed.config, secrets), secrets.natsToken, Number(process.env[WORKER_SLOT_ENV]) || (cluster.worker?.id ?? 0));
  }
}

/** A worker's secret settings, asked of the primary (they are not in its environment). */
function secretsFromPrimary(): Promise<Secrets> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the primary did not send the secret settings within 10 s")), 10_000);
    const onMessage = (m: unknown): void => {
      if (!isFgwMessage(m) || (m as ToWorker).type !== "fgw:secrets") return;
      clearTimeout(timer);
      process.off("message", onMessage);
      resolve((m as ToWorker & { type: "fgw:secrets" }).secrets);
    };
    process.on("message", onMessage);
    process.send?.({ type: "fgw:secrets-req" } satisfies ToPrimary);
  });
}

main().catch((e: unknown) => {
  const msg = e instanceof ProcessError || e instanceof GatewayError ? `${e.code}: ${e.message}` : e instanceof Error ? (e.stack ?? e.message) : String(e);
  process.stderr.write(`fanout-gateway: ${msg}\n`);
  process.exit(1);
});
