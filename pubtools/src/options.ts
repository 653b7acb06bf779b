// pub-cluster's command line, parsed once into a frozen, typed object.
import { parseArgs } from "node:util";

export type PubTarget = "gateway-ws" | "gateway-http" | "jetstream" | "nats" | "redis" | "socketio" | "centrifuge";

export type PubOptions = Readonly<{
  intervalMs: number;
  perInterval: number;
  processes: number;
  passes: number;
  hosts: readonly string[];
  port: number;
  size: number;
  channels: readonly string[];
  target: PubTarget;
  /** Await each ack before the next publish. */
  sync: boolean;
  /** Publishes in flight at once per process when not --sync. */
  window: number;
  /** Gateway targets: publishes gathered into batch requests of up to this many (1: one request each). */
  batch: number;
  timeoutMs: number;
  /** Send a de-duplication id (JetStream Nats-Msg-Id / gateway msgId) of "<publisher>:<seq>". */
  msgId: boolean;
  json: string | null;
  quiet: boolean;
  /** JetStream subject prefix the gateway reads (stream FANOUT_CHANNELS by default, subjects ev.<channel>). */
  subjectPrefix: string;
  path: string;
  /** Skip the clock exchange with the server (no "o" in the payloads). */
  noClock: boolean;
}>;

export const PUB_DEFAULT_PORTS: Record<PubTarget, number> = {
  "gateway-ws": 9000,
  "gateway-http": 9000,
  jetstream: 4222,
  nats: 4222,
  redis: 6379,
  socketio: 3000,
  centrifuge: 8000,
};

export const PUB_USAGE = `usage: pub-cluster [-t interval-ms] [-n messages-per-interval] [-c processes] [-p passes]
                   [-H host[,host…]] [--port port] [--size bytes] [--channel name …]
                   [--target gateway-ws|gateway-http|jetstream|nats|redis|socketio|centrifuge] [--sync | --window N] [--batch N]
                   [--timeout ms] [--msg-id] [--no-clock] [--json FILE] [--quiet]`;

export class PubUsageError extends Error {
  override readonly name = "PubUsageError";
}

function int(name: string, v: string | undefined, def: number, min: number): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new PubUsageError(`${name} must be an integer >= ${min}, got "${v}"`);
  return n;
}

function list(values: readonly string[] | undefined): string[] {
  return (values ?? [])
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter((v) => v !== "");
}

export function parsePubOptions(argv: readonly string[]): PubOptions {
  const { values, positionals } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: true,
    options: {
      t: { type: "string", short: "t" },
      n: { type: "string", short: "n" },
      c: { type: "string", short: "c" },
      p: { type: "string", short: "p" },
      H: { type: "string", short: "H", multiple: true },
      port: { type: "string" },
      size: { type: "string" },
      channel: { type: "string", multiple: true },
      target: { type: "string" },
      sync: { type: "boolean" },
      window: { type: "string" },
      batch: { type: "string" },
      timeout: { type: "string" },
      "msg-id": { type: "boolean" },
      json: { type: "string" },
      quiet: { type: "boolean", short: "q" },
      "subject-prefix": { type: "string" },
      path: { type: "string" },
      "no-clock": { type: "boolean" },
    },
  });
  if (positionals.length > 0) throw new PubUsageError(`unexpected argument "${positionals[0]}"`);
  const target = (values.target ?? "gateway-ws") as PubTarget;
  if (!(target in PUB_DEFAULT_PORTS)) throw new PubUsageError(`--target must be one of ${Object.keys(PUB_DEFAULT_PORTS).join(", ")}, got "${values.target}"`);
  if (values.sync && values.window !== undefined) throw new PubUsageError("--sync and --window exclude each other");
  const batch = int("--batch", values.batch, 1, 1);
  if (batch > 1 && target !== "gateway-ws" && target !== "gateway-http")
    throw new PubUsageError("--batch is for the gateway targets (gateway-ws, gateway-http)");
  if (batch > 1 && (values.sync || int("--window", values.window, 100, 1) < batch))
    throw new PubUsageError(`--batch ${batch} needs --window of at least ${batch} (and not --sync)`);
  const hosts = list(values.H);
  const channels = list(values.channel);
  return Object.freeze({
    intervalMs: int("-t", values.t, 1000, 0),
    perInterval: int("-n", values.n, 1, 1),
    processes: int("-c", values.c, 1, 1),
    passes: int("-p", values.p, 100, 1),
    hosts: Object.freeze(hosts.length ? hosts : ["127.0.0.1"]),
    port: int("--port", values.port, PUB_DEFAULT_PORTS[target], 1),
    size: int("--size", values.size, 100, 0),
    channels: Object.freeze(channels.length ? channels : ["bench.x"]),
    target,
    sync: values.sync ?? false,
    window: values.sync ? 1 : int("--window", values.window, 100, 1),
    batch,
    timeoutMs: int("--timeout", values.timeout, 10_000, 1),
    msgId: values["msg-id"] ?? false,
    json: values.json ?? null,
    quiet: values.quiet ?? false,
    subjectPrefix: values["subject-prefix"] ?? "ev.",
    path: values.path ?? "/ws",
    noClock: values["no-clock"] ?? false,
  });
}
