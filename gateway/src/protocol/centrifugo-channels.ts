import { checkChannel } from "./channel.js";

/**
 * Centrifugo channel names and this gateway's channels, one reversible mapping (pure; the server API uses it
 * now, the Centrifugo client door will too).
 *
 * A Centrifugo name is `namespace:rest` (the first `:` is the boundary) or a name without a namespace, any
 * characters in either part. A gateway channel is dot-separated tokens, and a namespace here is a prefix of
 * whole tokens. So:
 *
 * - `ns:rest` → `ns.rest`: the namespace is the first token; dots in `rest` separate tokens as they do here
 *   (`chat:room.1` → `chat.room.1`, so a `chat.>` subscription, namespace `chat` and its settings apply);
 *   further `:` stay as they are (`chat:a:b` → `chat.a:b`).
 * - a name without `:` → one token: its dots are escaped (`news.sport` → `news%2Esport`), so it never looks
 *   like a namespaced name on the way back.
 * - Escaped as `%XX` (the UTF-8 bytes, upper-case hex), anywhere: `%` itself, whitespace, `*`, `>`, the
 *   control and invisible characters the channel rules refuse, a `.` in the namespace part, and a `$` that
 *   would start the whole name (Centrifugo's private-channel prefix: `$secret` → `%24secret`).
 *
 * Back: one token is a name without namespace (escapes decoded); more tokens are `first:rest`. A gateway
 * channel is given a Centrifugo name only when mapping that name forward gives the channel back exactly
 * (`50%off`, `x:y.z`, `%41` have none), so the mapping is one-to-one both ways.
 *
 * A Centrifugo name that maps to no valid channel (empty parts, `chat:a..b`, more than 16 tokens or 255
 * characters once escaped) is refused; the server API answers it `107 bad request` (the name is malformed
 * for this server), not `102 unknown channel`, which Centrifugo keeps for a namespace that is not configured
 * (here every name outside a namespace is in the default stream).
 */
export const NAMESPACE_BOUNDARY = ":";

/** The result of a mapping: the name, or why there is none. */
export type Mapped = { ok: true; name: string } | { ok: false; reason: string };

// Always escaped: the escape character, what the channel rules refuse inside a token (whitespace, wildcards,
// control and invisible characters). The dot is escaped where it is not a token separator (see escapeWith).
const ALWAYS = /[%\s*>\u0000-\u001f\u007f-\u009f\u00ad\u061c\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/gu;

const hex = (c: string): string => [...Buffer.from(c, "utf8")].map((b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`).join("");

function escape(part: string, dots: boolean): string {
  const s = part.replace(ALWAYS, hex);
  return dots ? s.replaceAll(".", "%2E") : s;
}

/** A Centrifugo channel name as this gateway's channel. */
export function toGatewayChannel(name: string): Mapped {
  if (name.length === 0) return { ok: false, reason: "channel is empty" };
  if (!name.isWellFormed()) return { ok: false, reason: "channel is not well-formed Unicode (a lone surrogate)" };
  const at = name.indexOf(NAMESPACE_BOUNDARY);
  let mapped: string;
  if (at < 0) mapped = escape(name, true);
  else {
    const ns = name.slice(0, at);
    const rest = name.slice(at + 1);
    if (ns.length === 0) return { ok: false, reason: `channel ${JSON.stringify(name)} has an empty namespace before ":"` };
    if (rest.length === 0) return { ok: false, reason: `channel ${JSON.stringify(name)} has nothing after its namespace` };
    mapped = `${escape(ns, true)}.${escape(rest, false)}`;
  }
  if (mapped.startsWith("$")) mapped = `%24${mapped.slice(1)}`;
  const c = checkChannel(mapped);
  return c.ok ? { ok: true, name: mapped } : { ok: false, reason: `channel ${JSON.stringify(name)} maps to ${JSON.stringify(mapped)}: ${c.reason}` };
}

/** This gateway's channel as a Centrifugo name, when it has one (see the module's comment). */
export function toCentrifugoChannel(channel: string): Mapped {
  const dot = channel.indexOf(".");
  const raw = dot < 0 ? channel : `${channel.slice(0, dot)}${NAMESPACE_BOUNDARY}${channel.slice(dot + 1)}`;
  let name: string;
  try {
    name = decodeURIComponent(raw);
  } catch {
    return { ok: false, reason: `channel ${JSON.stringify(channel)} holds a "%" that is no escape` };
  }
  const back = toGatewayChannel(name);
  return back.ok && back.name === channel ? { ok: true, name } : { ok: false, reason: `channel ${JSON.stringify(channel)} has no Centrifugo name` };
}
