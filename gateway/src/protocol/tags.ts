import { headerJson, lastRead } from "./header-json.js";

/**
 * A publication's tags (Centrifugo's `tags`: string keys to string values), given by the server API's `publish`
 * and `broadcast` and stored with the message in this NATS header as one line of JSON (non-ASCII escaped), so
 * that every publication push of the Centrifuge door (live, recovered, in history) carries them.
 */
export const TAGS_HEADER = "Fanout-Tags";

export type Tags = Readonly<Record<string, string>>;

/** The most tags a publication carries. */
export const MAX_TAGS = 32;
/** The most bytes their JSON may take (keys and values together). */
export const MAX_TAGS_BYTES = 1_024;

/** `tags` as a request gives it: an object of strings within the bounds (absent, null and `{}`: none), or what is wrong. */
export function readTags(v: unknown): { tags?: Tags } | { error: string } {
  if (v === undefined || v === null) return {};
  if (typeof v !== "object" || Array.isArray(v)) return { error: "tags must be an object of strings" };
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length === 0) return {};
  if (entries.length > MAX_TAGS) return { error: `tags holds at most ${MAX_TAGS} keys (this one ${entries.length})` };
  if (entries.some(([, x]) => typeof x !== "string")) return { error: "tags must be an object of strings" };
  if (Buffer.byteLength(JSON.stringify(v)) > MAX_TAGS_BYTES) return { error: `tags must encode to at most ${MAX_TAGS_BYTES} bytes of JSON` };
  return { tags: v as Tags };
}

/** The header's value: JSON on one line, non-ASCII escaped. */
export const tagsHeader = (t: Tags): string => headerJson(t);

/** The stored header as the broker hands it over (its text, not read yet): only the Centrifuge door reads it. */
export type StoredTags = string;

/**
 * The tags of a stored header, parsed once per worker: undefined when they are not what this gateway writes
 * (another NATS client may set the header to anything).
 */
export const readStoredTags: (text: StoredTags | undefined) => Tags | undefined = lastRead((text) => {
  let v: unknown;
  try {
    v = text.length <= 2 * MAX_TAGS_BYTES ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
  const t = readTags(v);
  return "tags" in t ? t.tags : undefined;
});
