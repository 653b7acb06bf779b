import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { ConfigError } from "../errors.js";
import { SETTINGS, type ReadSetting, type SettingKey } from "./settings.js";
import { SECTIONS } from "./sections/index.js";
import { livePrefixOf } from "./sections/stream.js";
import { controlPrefixOf } from "./sections/control.js";
import { authEnabled, checkAuthConfig, checkNatsSecurity } from "./checks.js";
import { checkRegions } from "./sections/regions.js";
import { presenceSubjects } from "./sections/presence.js";
import { namespaceStreamName, namespaceSubjectPrefix } from "../namespaces/namespace.js";

export type { Config } from "./settings.js";
import type { Config } from "./settings.js";

/** Env var through which the primary hands its resolved config to workers. */
export const WORKER_CONFIG_ENV = "FGW_WORKER_CONFIG";
/** Env var with a worker's slot (1..WORKERS): a restarted worker takes the slot of the one it replaces. */
export const WORKER_SLOT_ENV = "FGW_WORKER_SLOT";

/** Package root (where package.json is), from dist/gateway/src/config or gateway/src/config. */
export const PACKAGE_ROOT = (() => {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(resolve(dir, "package.json"))) return dir;
    dir = dirname(dir);
  }
  return process.cwd();
})();

export type ParsedCli = { config: Config; help: boolean; configTable: boolean };

/** Parses argv (without node and script) and env. Throws ConfigError naming the setting on a bad value. */
export function loadConfig(argv: string[], env: NodeJS.ProcessEnv): ParsedCli {
  const inherited = env[WORKER_CONFIG_ENV];
  if (inherited) return { config: Object.freeze(JSON.parse(inherited)) as Config, help: false, configTable: false };

  const options: Record<string, { type: "string" | "boolean" }> = { help: { type: "boolean" }, "config-table": { type: "boolean" } };
  for (const s of Object.values(SETTINGS) as ReadSetting<unknown>[]) {
    const option = { type: s.boolean ? ("boolean" as const) : ("string" as const) };
    options[s.flag] = option;
    if (s.formerly) options[s.formerly.flag] = option;
  }
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values;
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    const flag = /'(--?[\w-]+)/.exec(msg)?.[1] ?? "arguments";
    throw new ConfigError(flag, `${msg} (see --help)`);
  }

  const out: Record<string, unknown> = {};
  for (const [key, s] of Object.entries(SETTINGS) as [SettingKey, ReadSetting<unknown>][]) {
    const old = s.formerly;
    out[key] = readSetting(s, values[s.flag] ?? (old ? values[old.flag] : undefined), env[s.env] || (old ? env[old.env] : undefined));
  }
  const config = out as Config;
  crossCheck(config);
  // Without authentication nothing beyond this host may reach the gateway unless HOST says so.
  if (config.host === "auto") (out as { host: string }).host = authEnabled(config) ? "0.0.0.0" : "127.0.0.1";
  if (!config.natsServerBin) {
    const local = resolve(PACKAGE_ROOT, ".tools/bin/nats-server");
    (out as { natsServerBin: string }).natsServerBin = existsSync(local) ? local : "nats-server";
  }
  return { config: Object.freeze(config), help: values.help === true, configTable: values["config-table"] === true };
}

/** Settings given by a former name (env or flag) and not by their current one: each gets a deprecation warning. */
export function formerNamesUsed(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): { was: string; now: string }[] {
  const used: { was: string; now: string }[] = [];
  for (const s of Object.values(SETTINGS) as ReadSetting<unknown>[]) {
    const old = s.formerly;
    if (!old) continue;
    const flagged = (f: string) => argv.some((a) => a === `--${f}` || a.startsWith(`--${f}=`));
    if (flagged(old.flag) && !flagged(s.flag)) used.push({ was: `--${old.flag}`, now: `--${s.flag}` });
    else if (env[old.env] && !env[s.env] && !flagged(s.flag)) used.push({ was: old.env, now: s.env });
  }
  return used;
}

/** Whether a setting was given (env, flag, or a former name of either): not given, it holds its default. */
export function settingGiven(key: SettingKey, argv: readonly string[], env: Readonly<Record<string, string | undefined>>): boolean {
  const s = SETTINGS[key] as ReadSetting<unknown>;
  const flagged = (f: string) => argv.some((a) => a === `--${f}` || a.startsWith(`--${f}=`));
  return [s, ...(s.formerly ? [s.formerly] : [])].some((n) => flagged(n.flag) || Boolean(env[n.env]));
}

function readSetting(s: ReadSetting<unknown>, flagValue: string | boolean | undefined, envValue: string | undefined): unknown {
  const name = `${s.env} (--${s.flag})`;
  let value: unknown;
  try {
    if (flagValue !== undefined) value = typeof flagValue === "boolean" ? flagValue : s.parse(flagValue);
    else if (envValue !== undefined && envValue !== "") value = s.parse(envValue);
    else return s.default();
  } catch (e) {
    throw new ConfigError(s.env, `invalid ${name}: ${(e as Error).message}`);
  }
  const problem = s.check?.(value);
  if (problem) throw new ConfigError(s.env, `invalid ${name}: ${JSON.stringify(value)} ${problem}`);
  return value;
}

function crossCheck(c: Config): void {
  if (c.maxBackpressureBytes <= c.backpressureBytes) {
    throw new ConfigError(
      "MAX_BACKPRESSURE_BYTES",
      `invalid MAX_BACKPRESSURE_BYTES (--max-backpressure-bytes): must be larger than BACKPRESSURE_BYTES (${c.backpressureBytes})`,
    );
  }
  for (const u of c.natsUrl) {
    if (!/^(nats|tls|ws|wss):\/\/[^\s]+$/.test(u) && !/^[\w.-]+:\d+$/.test(u)) {
      throw new ConfigError("NATS_URL", `invalid NATS_URL (--nats-url): "${u}" is not a NATS URL (nats://host:port)`);
    }
  }
  if (c.redisUrl && !/^rediss?:\/\//.test(c.redisUrl)) {
    throw new ConfigError("REDIS_URL", `invalid REDIS_URL (--redis-url): "${c.redisUrl}" is not a redis:// URL`);
  }
  const live = livePrefixOf(c);
  if (overlap(live, c.subjectPrefix)) {
    throw new ConfigError(
      "LIVE_SUBJECT_PREFIX",
      `invalid LIVE_SUBJECT_PREFIX (--live-subject-prefix): "${live}" overlaps the stream's subjects ${c.subjectPrefix}.>`,
    );
  }
  const ctl = controlPrefixOf(c);
  for (const other of [c.subjectPrefix, live])
    if (overlap(ctl, other))
      throw new ConfigError("CONTROL_SUBJECT_PREFIX", `invalid CONTROL_SUBJECT_PREFIX (--control-subject-prefix): "${ctl}" overlaps the subjects ${other}.>`);
  const presence = c.broker === "jetstream" ? Object.values(presenceSubjects(c.presenceBucket)) : [];
  checkPresenceOverlap(presence, [
    ["SUBJECT_PREFIX", "subject-prefix", "the stream's subjects", c.subjectPrefix],
    ["LIVE_SUBJECT_PREFIX", "live-subject-prefix", "the live subjects", live],
    ["CONTROL_SUBJECT_PREFIX", "control-subject-prefix", "the control plane's subjects", ctl],
  ]);
  if (c.eventsKinds.length > 0 || c.eventsWebhookUrl) {
    if (c.broker !== "jetstream") throw new ConfigError("EVENTS", "invalid EVENTS (--events): events are stored in a JetStream stream; BROKER=redis has none");
    for (const [what, other] of [
      ["the stream's subjects", c.subjectPrefix],
      ["the live subjects", live],
      ["the control plane's subjects", ctl],
      ...presence.map((p) => ["the presence bucket's subjects", p] as const),
    ] as const)
      if (overlap(c.eventsSubject, other))
        throw new ConfigError("EVENTS_SUBJECT", `invalid EVENTS_SUBJECT (--events-subject): "${c.eventsSubject}" overlaps ${what} ${other}`);
    if (c.eventsWebhookTakeoverMs < 2 * c.eventsWebhookWaitMs)
      throw new ConfigError(
        "EVENTS_WEBHOOK_TAKEOVER",
        `invalid EVENTS_WEBHOOK_TAKEOVER (--events-webhook-takeover): must be at least twice EVENTS_WEBHOOK_WAIT (${c.eventsWebhookWaitMs} ms)`,
      );
  }
  checkStreamAges(c);
  checkRegions(c);
  checkAuthConfig(c);
  checkNatsSecurity(c);
  checkNamespaces(c, [live, ctl, ...presence]);
}

/** Two subject prefixes overlap when one's subjects (`<prefix>.>`) include the other's. */
const overlap = (a: string, b: string): boolean => a === b || a.startsWith(`${b}.`) || b.startsWith(`${a}.`);

/**
 * A stream, live or control prefix over the presence bucket's subjects would store or deliver every member's
 * presence record as if it were a channel's message.
 */
function checkPresenceOverlap(presence: readonly string[], prefixes: readonly (readonly [string, string, string, string])[]): void {
  for (const [env, flag, what, prefix] of prefixes)
    for (const p of presence)
      if (overlap(prefix, p))
        throw new ConfigError(
          env,
          `invalid ${env} (--${flag}): ${what} ${prefix}.> overlap the presence bucket's subjects ${p}.> (PRESENCE_BUCKET); choose another prefix`,
        );
}

/**
 * A stream keeps a message id for its duplicate window, and NATS refuses a window longer than the stream's
 * maxAge (0: forever): said at start, naming the stream and both settings, not as a stream the primary cannot
 * create.
 */
function checkStreamAges(c: Config): void {
  if (c.broker !== "jetstream") return;
  if (c.streamMaxAge > 0 && c.streamMaxAge < c.streamDuplicateWindow)
    throw new ConfigError(
      "STREAM_DUPLICATE_WINDOW",
      `invalid STREAM_DUPLICATE_WINDOW (--stream-duplicate-window): ${c.streamDuplicateWindow} ms is longer than STREAM_MAX_AGE (${c.streamMaxAge} ms); the duplicate window must not outlast the messages`,
    );
  for (const ns of c.namespaces.namespaces) {
    const maxAge = ns.maxAgeMs ?? c.streamMaxAge;
    const window = ns.duplicateWindowMs ?? c.streamDuplicateWindow;
    if (maxAge > 0 && maxAge < window)
      throw new ConfigError(
        "NAMESPACES_FILE",
        `invalid NAMESPACES_FILE (--namespaces-file): namespace "${ns.name}": maxAge (${maxAge} ms${ns.maxAgeMs === undefined ? ", from STREAM_MAX_AGE" : ""}) is shorter than duplicateWindow (${window} ms${ns.duplicateWindowMs === undefined ? ", from STREAM_DUPLICATE_WINDOW" : ""}); NATS refuses a stream whose duplicate window outlasts its messages: lengthen maxAge or set a shorter duplicateWindow`,
      );
  }
}

/** Namespaces need JetStream, streams of their own, and subjects that overlap nothing else. */
function checkNamespaces(c: Config, others: readonly string[]): void {
  const list = c.namespaces.namespaces;
  if (list.length === 0) return;
  const setting = "invalid NAMESPACES_FILE (--namespaces-file)";
  if (c.broker !== "jetstream")
    throw new ConfigError("NAMESPACES_FILE", `${setting}: namespaces need BROKER=jetstream (each has a JetStream stream of its own); redis has no streams`);
  const streams = new Map<string, string>([
    [c.streamName, "the default stream (STREAM_NAME)"],
    [`KV_${c.presenceBucket}`, "the presence bucket (PRESENCE_BUCKET)"],
  ]);
  for (const ns of list) {
    const name = ns.stream ?? namespaceStreamName(c.streamName, ns.name);
    const taken = streams.get(name);
    if (taken) throw new ConfigError("NAMESPACES_FILE", `${setting}: namespace "${ns.name}": stream ${name} is already ${taken}'s`);
    streams.set(name, `namespace "${ns.name}"`);
  }
  const nsPrefix = namespaceSubjectPrefix(c.subjectPrefix);
  for (const other of others)
    if (overlap(nsPrefix, other))
      throw new ConfigError("NAMESPACES_FILE", `${setting}: the namespace streams' subjects ${nsPrefix}.> overlap the subjects ${other}.>`);
}

export { controlPrefixOf, livePrefixOf };

/** The settings tables in Markdown, one per section (as in docs/operations.md, `npm run docs:settings`). */
export function settingsTable(): string {
  return SECTIONS.map((s) => {
    const rows = (Object.values(SETTINGS) as ReadSetting<unknown>[])
      .filter((r) => r.section === s.name)
      .map((r) => `| \`${r.env}\` | \`--${r.flag}\` | ${r.shown} | ${r.doc} |`);
    return [`### Settings: ${s.name}`, "", `${s.title}.`, "", "| env | flag | default | meaning |", "|---|---|---|---|", ...rows].join("\n");
  }).join("\n\n");
}
