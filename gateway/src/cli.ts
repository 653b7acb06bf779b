#!/usr/bin/env node
import cluster from "node:cluster";
import { loadConfig, settingsTable, WORKER_SLOT_ENV } from "./config/config.js";
import { runPrimary } from "./cluster/primary.js";
import { runWorker } from "./cluster/worker.js";
import { ConfigError, GatewayError, ProcessError } from "./errors.js";
import { withSecrets, type Secrets } from "./config/secrets.js";
import { isFgwMessage, type ToPrimary, type ToWorker } from "./cluster/ipc.js";

const USAGE = `fanout-gateway — WebSocket fan-out gateway on NATS JetStream

Usage: fanout-gateway [--flag value ...]   (every flag is also an env var)

Settings:
`;

async function main(): Promise<void> {
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
  if (cluster.isPrimary) await runPrimary(parsed.config);
  else {
    const secrets = await secretsFromPrimary();
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
