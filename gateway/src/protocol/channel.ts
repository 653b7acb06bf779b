/**
 * Channel names and subscription patterns. A channel is dot-separated tokens (`orders.eu`); a pattern may
 * use NATS wildcards: `*` matches one token, a final `>` matches one or more tokens.
 */
export const MAX_CHANNEL_LENGTH = 255;
export const MAX_CHANNEL_TOKENS = 16;

// No whitespace, wildcards inside tokens, or NATS-special characters.
const TOKEN = /^[^\s*>.]+$/;
/**
 * Characters that make one name look like another, or like nothing: C0 and C1 controls (U+0000–U+001F,
 * U+007F–U+009F), bidi formatting (the marks U+061C, U+200E, U+200F, the embeddings and overrides
 * U+202A–U+202E, the isolates U+2066–U+2069), and the invisible U+00AD (soft hyphen), U+200B (zero width
 * space), U+2060–U+2064 (word joiner, invisible operators) and U+FEFF (also whitespace). Zero width (non-)
 * joiners, variation selectors and tags stay: scripts and emoji sequences need them.
 */
const UNSEEN = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/u;

export type ChannelCheck = { ok: true } | { ok: false; reason: string };

function check(name: unknown, allowWildcards: boolean): ChannelCheck {
  if (typeof name !== "string") return { ok: false, reason: "channel must be a string" };
  if (name.length === 0) return { ok: false, reason: "channel is empty" };
  if (name.length > MAX_CHANNEL_LENGTH) return { ok: false, reason: `channel is longer than ${MAX_CHANNEL_LENGTH} characters` };
  if (name.startsWith("$")) return { ok: false, reason: "channel must not start with $" };
  // A lone surrogate would be sent as U+FFFD: two names would be one subject (lone.\uD800 and lone.\uFFFD).
  if (!name.isWellFormed()) return { ok: false, reason: "channel is not well-formed Unicode (a lone surrogate)" };
  const tokens = name.split(".");
  if (tokens.length > MAX_CHANNEL_TOKENS) return { ok: false, reason: `channel has more than ${MAX_CHANNEL_TOKENS} tokens` };
  for (const [i, t] of tokens.entries()) {
    if (t.length === 0) return { ok: false, reason: "channel has an empty token" };
    if (t === "*" || t === ">") {
      if (!allowWildcards) return { ok: false, reason: "wildcards are not allowed here" };
      if (t === ">" && i !== tokens.length - 1) return { ok: false, reason: "> must be the last token" };
      continue;
    }
    const unseen = UNSEEN.exec(t)?.[0];
    if (unseen !== undefined) return { ok: false, reason: `channel has the invisible or control character ${codePoint(unseen)}` };
    if (!TOKEN.test(t)) return { ok: false, reason: `token "${t}" has a space, wildcard or control character` };
  }
  return { ok: true };
}

const codePoint = (c: string): string => `U+${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}`;

/** A concrete channel (publish target): no wildcards. */
export const checkChannel = (name: unknown): ChannelCheck => check(name, false);
/** A subscription pattern: wildcards allowed. */
export const checkPattern = (name: unknown): ChannelCheck => check(name, true);

export const isWildcard = (pattern: string): boolean => pattern.split(".").some((t) => t === "*" || t === ">");

/** NATS matching of a concrete channel against a pattern. */
export function matches(pattern: string, channel: string): boolean {
  const p = pattern.split(".");
  const c = channel.split(".");
  for (const [i, t] of p.entries()) {
    if (t === ">") return c.length > i;
    const token = c[i];
    if (token === undefined) return false;
    if (t !== "*" && t !== token) return false;
  }
  return p.length === c.length;
}

/** Maps channels to broker subjects and back: `orders.eu` ⇄ `<prefix>.orders.eu`. */
export class SubjectMapper {
  private readonly prefixDot: string;
  constructor(readonly prefix: string) {
    this.prefixDot = `${prefix}.`;
  }
  toSubject(channel: string): string {
    return this.prefixDot + channel;
  }
  toChannel(subject: string): string {
    return subject.startsWith(this.prefixDot) ? subject.slice(this.prefixDot.length) : subject;
  }
  /** True when `subject` is one of this prefix's (a stored message of this mapper's stream). */
  owns(subject: string): boolean {
    return subject.startsWith(this.prefixDot);
  }
  /** Subjects of the stream: `<prefix>.>`. */
  get streamSubject(): string {
    return `${this.prefix}.>`;
  }
}
