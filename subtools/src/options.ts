// sub-cluster's command line, parsed once into a frozen, typed object.
import { parseArgs } from "node:util";

export type SubTarget = "gateway" | "redis" | "nats" | "socketio" | "centrifuge";
/**
 * How WebSocket clients are implemented: a plain TCP socket with a minimal frame reader (`lean`), the `ws`
 * package, or `native`: processes outside Node (subtools/native, Go) on one epoll loop each, with the
 * kernel's receive timestamps (gateway target).
 */
export type Engine = "lean" | "ws" | "native";
/** Gateway replay start: everything, from a stream sequence, or the last N. */
export type FromSpec = "all" | { seq: number } | { last: number };

export type SubOptions = Readonly<{
  processes: number;
  clientsPerProcess: number;
  hosts: readonly string[];
  port: number;
  channels: readonly string[];
  target: SubTarget;
  /** Seconds; 0 = until end markers, idle or Ctrl-C. */
  durationS: number;
  /** Seconds without messages (after the first) that end the run; 0 = never. */
  idleS: number;
  /** Connections per second for the whole run (spread over processes); 0 = as fast as the cap allows. */
  ramp: number;
  /**
   * Connection attempts (connect and upgrade) in flight per process, at most. With many processes against a busy
   * server, fewer keep each attempt's wait under the client's 10 s deadline: what waits in flight over all
   * processes, divided by what the server accepts a second, is how long each attempt takes.
   */
  maxPending: number;
  from: FromSpec | null;
  /** Expected messages per client, or null. */
  expect: number | null;
  json: string | null;
  /**
   * Appends one JSON line per second (the live line's figures: clients subscribed, messages received so far,
   * and that second's latency window), so that a caller can split a run into phases.
   */
  progress: string | null;
  /** Prints the live line every second. */
  quiet: boolean;
  path: string;
  /** WebSocket client engine (gateway target; Socket.IO and centrifuge are lean only). */
  engine: Engine;
  /** Source addresses to connect from, round-robin; empty = the kernel's choice (spread automatically on loopback). */
  localAddresses: readonly string[];
  /** Skip the clock exchange with the server. */
  noClock: boolean;
}>;

export const DEFAULT_PORTS: Record<SubTarget, number> = { gateway: 9000, redis: 6379, nats: 4222, socketio: 3000, centrifuge: 8000 };
export const DEFAULT_CHANNEL = "bench.x";
export const DEFAULT_IDLE_S = 10;
/** Connection attempts in flight per process unless --max-pending says otherwise. */
export const DEFAULT_MAX_PENDING = 256;

export const SUB_USAGE = `usage: sub-cluster [-c processes] [-n clients-per-process] [-H host[,host…]] [-p port]
                   [--channel name …] [--target gateway|redis|nats|socketio|centrifuge] [--engine lean|ws|native]
                   [-d seconds] [--idle seconds] [--ramp conns-per-s] [--max-pending N] [--from all|SEQ|last:N] [--expect N]
                   [--local-address a[,b…]] [--no-clock] [--json FILE] [--progress FILE] [--quiet]
       sub-cluster merge [--accept-unknown-offsets] a.json b.json …`;

export class UsageError extends Error {
  override readonly name = "UsageError";
}

function int(name: string, v: string | undefined, def: number, min: number): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`${name} must be an integer >= ${min}, got "${v}"`);
  return n;
}

function num(name: string, v: string | undefined, def: number): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new UsageError(`${name} must be a number >= 0, got "${v}"`);
  return n;
}

export function parseFrom(v: string): FromSpec {
  if (v === "all") return "all";
  const m = /^last:(\d+)$/.exec(v);
  if (m) return { last: Number(m[1]) };
  if (/^\d+$/.test(v) && Number(v) >= 1) return { seq: Number(v) };
  throw new UsageError(`--from must be all, a sequence >= 1 or last:N, got "${v}"`);
}

/** Splits repeatable, comma-separated values. */
export function list(values: readonly string[] | undefined): string[] {
  return (values ?? [])
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter((v) => v !== "");
}

export function parseSubOptions(argv: readonly string[]): SubOptions {
  const { values, positionals } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: true,
    options: {
      c: { type: "string", short: "c" },
      n: { type: "string", short: "n" },
      H: { type: "string", short: "H", multiple: true },
      p: { type: "string", short: "p" },
      port: { type: "string" },
      channel: { type: "string", multiple: true },
      target: { type: "string" },
      duration: { type: "string", short: "d" },
      idle: { type: "string" },
      ramp: { type: "string" },
      "max-pending": { type: "string" },
      from: { type: "string" },
      expect: { type: "string" },
      json: { type: "string" },
      progress: { type: "string" },
      quiet: { type: "boolean", short: "q" },
      path: { type: "string" },
      engine: { type: "string" },
      "local-address": { type: "string", multiple: true },
      "no-clock": { type: "boolean" },
    },
  });
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  const target = (values.target ?? "gateway") as SubTarget;
  if (!(target in DEFAULT_PORTS)) throw new UsageError(`--target must be one of ${Object.keys(DEFAULT_PORTS).join(", ")}, got "${values.target}"`);
  const engine = (values.engine ?? "lean") as Engine;
  if (engine !== "lean" && engine !== "ws" && engine !== "native") throw new UsageError(`--engine must be lean, ws or native, got "${values.engine}"`);
  if (engine !== "lean" && target !== "gateway")
    throw new UsageError(`--engine ${engine} is for --target gateway (Socket.IO and centrifuge clients are lean only; Redis and NATS use their libraries)`);
  if (values.p !== undefined && values.port !== undefined) throw new UsageError("give -p or --port, not both");
  const from = values.from === undefined ? null : parseFrom(values.from);
  if (from !== null && target !== "gateway") throw new UsageError("--from needs --target gateway (raw Redis and core NATS do not replay)");
  const hosts = list(values.H);
  const channels = list(values.channel);
  return Object.freeze({
    processes: int("-c", values.c, 1, 1),
    clientsPerProcess: int("-n", values.n, 100, 1),
    hosts: Object.freeze(hosts.length ? hosts : ["127.0.0.1"]),
    port: int("--port", values.p ?? values.port, DEFAULT_PORTS[target], 1),
    channels: Object.freeze(channels.length ? channels : [DEFAULT_CHANNEL]),
    target,
    durationS: num("-d", values.duration, 0),
    idleS: num("--idle", values.idle, DEFAULT_IDLE_S),
    ramp: num("--ramp", values.ramp, 0),
    maxPending: int("--max-pending", values["max-pending"], DEFAULT_MAX_PENDING, 1),
    from,
    expect: values.expect === undefined ? null : int("--expect", values.expect, 0, 0),
    json: values.json ?? null,
    progress: values.progress ?? null,
    quiet: values.quiet ?? false,
    path: values.path ?? "/ws",
    engine,
    localAddresses: Object.freeze(list(values["local-address"])),
    noClock: values["no-clock"] ?? false,
  });
}
