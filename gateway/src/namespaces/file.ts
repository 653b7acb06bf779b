import { readFileSync } from "node:fs";
import { extname } from "node:path";
import { parse as parseYaml } from "yaml";
import { parseBytes, parseDuration } from "../config/parse.js";
import { distance } from "../util/distance.js";
import { FEATURES, type Feature, type NamespaceSpec, type NamespacesFile } from "./spec.js";
import { CHANNEL_EVENT_KINDS, type EventKind } from "../config/sections/events.js";

/**
 * Reading NAMESPACES_FILE: JSON (`.json`) or YAML (anything else), shaped
 *
 *   namespaces:
 *     chat: { maxAge: 7d, allowMsgTtl: true, features: { durables: false } }
 *     inbox: { prefix: app1.inbox, stream: INBOX, resumeWindow: 1h, events: [subscribe, unsubscribe] }
 *
 * Every problem throws a plain Error naming the namespace and the field; config.ts adds the setting's name.
 */

const NAME = /^[A-Za-z0-9_-]+$/;
const TOKEN = /^[A-Za-z0-9_-]+$/;
const TOP_FIELDS = ["namespaces"];
/** The longest coalescing window (`coalesce`, and COALESCE): a window delays each message by up to its length. */
export const MAX_COALESCE_MS = 1_000;
const FIELDS = [
  "prefix",
  "stream",
  "storage",
  "replicas",
  "maxAge",
  "maxMsgsPerSubject",
  "maxBytes",
  "duplicateWindow",
  "allowMsgTtl",
  "features",
  "resumeWindow",
  "events",
  "coalesce",
] as const;

export function readNamespacesFile(file: string): NamespacesFile {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new Error(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  return { file, namespaces: parseNamespaces(text, extname(file).toLowerCase() === ".json" ? "json" : "yaml") };
}

/** The namespaces of a file's text, checked (names, fields, values, prefixes that nest). */
export function parseNamespaces(text: string, format: "json" | "yaml"): NamespaceSpec[] {
  let doc: unknown;
  try {
    doc = format === "json" ? JSON.parse(text) : parseYaml(text);
  } catch (e) {
    throw new Error(`not valid ${format === "json" ? "JSON" : "YAML"}: ${(e as Error).message.split("\n")[0]}`);
  }
  if (doc === null || doc === undefined) return [];
  if (!isObject(doc)) throw new Error("must be an object with a `namespaces` map");
  rejectUnknown(doc, TOP_FIELDS, "the file");
  const map = doc.namespaces;
  if (map === undefined || map === null) return [];
  if (!isObject(map)) throw new Error("`namespaces` must be a map of namespace name to its settings");
  const out = Object.entries(map).map(([name, v]) => namespaceOf(name, v));
  checkPrefixes(out);
  return out;
}

function namespaceOf(name: string, v: unknown): NamespaceSpec {
  const at = `namespace "${name}"`;
  if (!NAME.test(name)) throw new Error(`${at}: the name must be letters, digits, _ or -`);
  if (v === null || v === undefined) v = {};
  if (!isObject(v)) throw new Error(`${at}: must be a map of settings`);
  rejectUnknown(v, FIELDS, at);
  const prefix = optString(v, "prefix", at) ?? name;
  if (!prefix.split(".").every((t) => TOKEN.test(t))) throw new Error(`${at}: prefix must be dot-separated tokens of letters, digits, _ or -, not "${prefix}"`);
  const stream = optString(v, "stream", at);
  if (stream !== undefined && !NAME.test(stream)) throw new Error(`${at}: stream must be letters, digits, _ or -, not "${stream}"`);
  const storage = optString(v, "storage", at);
  if (storage !== undefined && storage !== "file" && storage !== "memory") throw new Error(`${at}: storage must be file or memory, not "${storage}"`);
  const replicas = optInt(v, "replicas", at, 1, 5);
  const maxMsgsPerSubject = optInt(v, "maxMsgsPerSubject", at, -1, Number.MAX_SAFE_INTEGER);
  if (maxMsgsPerSubject === 0) throw new Error(`${at}: maxMsgsPerSubject must be positive, or -1 for unlimited`);
  const maxAgeMs = optDuration(v, "maxAge", at);
  const duplicateWindowMs = optDuration(v, "duplicateWindow", at);
  if (duplicateWindowMs !== undefined && duplicateWindowMs < 100) throw new Error(`${at}: duplicateWindow must be at least 100ms`);
  const maxBytes = optSize(v, "maxBytes", at);
  if (maxBytes === 0 || (maxBytes !== undefined && maxBytes < -1)) throw new Error(`${at}: maxBytes must be positive, or -1 for unlimited`);
  const resumeWindowMs = optDuration(v, "resumeWindow", at) ?? 0;
  const events = eventsOf(v.events, at);
  const coalesceMs = optDuration(v, "coalesce", at);
  if (coalesceMs !== undefined && coalesceMs > MAX_COALESCE_MS)
    throw new Error(`${at}: coalesce must be 0 (off) or a window up to 1s, not ${JSON.stringify(v.coalesce)}`);
  return Object.freeze({
    name,
    prefix,
    ...(stream !== undefined ? { stream } : {}),
    ...(storage !== undefined ? { storage } : {}),
    ...(replicas !== undefined ? { replicas } : {}),
    ...(maxAgeMs !== undefined ? { maxAgeMs } : {}),
    ...(maxMsgsPerSubject !== undefined ? { maxMsgsPerSubject } : {}),
    ...(maxBytes !== undefined ? { maxBytes } : {}),
    ...(duplicateWindowMs !== undefined ? { duplicateWindowMs } : {}),
    allowMsgTtl: optBool(v, "allowMsgTtl", at) ?? false,
    features: featuresOf(v.features, at),
    resumeWindowMs,
    ...(events !== undefined ? { events } : {}),
    ...(coalesceMs !== undefined ? { coalesceMs } : {}),
  });
}

/** `events`: the channel kinds recorded for the namespace's channels, a list; `false` (or `[]`) none; `true` or absent all. */
function eventsOf(v: unknown, at: string): readonly EventKind[] | undefined {
  if (v === undefined || v === null || v === true) return undefined;
  if (v === false) return Object.freeze([]);
  const kinds = CHANNEL_EVENT_KINDS.join(", ");
  if (!Array.isArray(v) || !v.every((k) => typeof k === "string")) throw new Error(`${at}: events must be a list of event kinds (${kinds}), or false for none`);
  for (const k of v) {
    if ((CHANNEL_EVENT_KINDS as readonly string[]).includes(k)) continue;
    const why = k === "connect" || k === "disconnect" ? `${k} is not about a channel (EVENTS sets it for all)` : `${k} is not a kind of channel event`;
    throw new Error(`${at}: events: ${why}; kinds: ${kinds}`);
  }
  return Object.freeze(CHANNEL_EVENT_KINDS.filter((k) => v.includes(k)));
}

function featuresOf(v: unknown, at: string): Record<Feature, boolean> {
  const out = Object.fromEntries(FEATURES.map((f) => [f, true])) as Record<Feature, boolean>;
  if (v === undefined || v === null) return out;
  if (!isObject(v)) throw new Error(`${at}: features must be a map of feature to true or false (${FEATURES.join(", ")})`);
  rejectUnknown(v, FEATURES, `${at}: features`);
  for (const f of FEATURES) out[f] = optBool(v, f, `${at}: features`) ?? true;
  return out;
}

/** Two prefixes where one is a prefix of the other would put a channel in two namespaces. */
function checkPrefixes(list: readonly NamespaceSpec[]): void {
  for (const a of list)
    for (const b of list) {
      if (a === b) continue;
      const ta = a.prefix.split(".");
      const tb = b.prefix.split(".");
      if (ta.length <= tb.length && ta.every((t, i) => tb[i] === t))
        throw new Error(
          `namespace "${b.name}": prefix ${b.prefix} ${ta.length === tb.length ? "is the same as" : "lies inside"} namespace "${a.name}"'s prefix ${a.prefix}: prefixes must not be prefixes of one another`,
        );
    }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function rejectUnknown(v: Record<string, unknown>, known: readonly string[], at: string): void {
  for (const k of Object.keys(v)) {
    if (known.includes(k)) continue;
    let best: string | undefined;
    let bestD = Infinity;
    for (const f of known) {
      const d = distance(k.toLowerCase(), f.toLowerCase());
      if (d < bestD) [best, bestD] = [f, d];
    }
    const hint = best !== undefined && bestD <= Math.max(2, Math.floor(k.length / 3)) ? `did you mean ${best}?` : `known: ${known.join(", ")}`;
    throw new Error(`${at}: unknown field "${k}" (${hint})`);
  }
}

function optString(v: Record<string, unknown>, k: string, at: string): string | undefined {
  const x = v[k];
  if (x === undefined || x === null) return undefined;
  if (typeof x !== "string" || x.trim() === "") throw new Error(`${at}: ${k} must be a non-empty string, not ${JSON.stringify(x)}`);
  return x.trim();
}

function optBool(v: Record<string, unknown>, k: string, at: string): boolean | undefined {
  const x = v[k];
  if (x === undefined || x === null) return undefined;
  if (typeof x !== "boolean") throw new Error(`${at}: ${k} must be true or false, not ${JSON.stringify(x)}`);
  return x;
}

function optInt(v: Record<string, unknown>, k: string, at: string, min: number, max: number): number | undefined {
  const x = v[k];
  if (x === undefined || x === null) return undefined;
  if (typeof x !== "number" || !Number.isSafeInteger(x) || x < min || x > max)
    throw new Error(`${at}: ${k} must be an integer from ${min} to ${max}, not ${JSON.stringify(x)}`);
  return x;
}

function optDuration(v: Record<string, unknown>, k: string, at: string): number | undefined {
  const x = v[k];
  if (x === undefined || x === null) return undefined;
  if (x === 0) return 0;
  try {
    if (typeof x !== "string") throw new Error("not a string");
    return parseDuration(x);
  } catch {
    throw new Error(`${at}: ${k} must be a duration like 7d, 24h, 30s or 0, not ${JSON.stringify(x)}`);
  }
}

function optSize(v: Record<string, unknown>, k: string, at: string): number | undefined {
  const x = v[k];
  if (x === undefined || x === null) return undefined;
  if (typeof x === "number" && Number.isSafeInteger(x)) return x;
  try {
    if (typeof x !== "string") throw new Error("not a string");
    return parseBytes(x);
  } catch {
    throw new Error(`${at}: ${k} must be a size like 1GiB, 512MiB or -1, not ${JSON.stringify(x)}`);
  }
}
