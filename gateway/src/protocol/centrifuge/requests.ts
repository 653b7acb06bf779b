/**
 * How the Centrifuge door (centrifugo/client/) hands a command to the native frame handlers and gets its reply
 * back in the protocol's shape. The handlers answer a frame with `ok`/`err` carrying the frame's `id`; this
 * door gives each translated frame an id that says which command it was and what its reply needs (the
 * command's own id, for a subscribe its start mode and offset), so that the codec (json.ts) can write the
 * reply without any per-socket state. Clients never see these ids.
 */

/** The command a native frame was translated from. */
/** `server_sub`: a server-side subscription the door started at connect (its state was in the connect reply: its `ok` is not answered). */
export type RequestKind = "subscribe" | "unsubscribe" | "publish" | "rpc" | "refresh" | "sub_refresh" | "server_sub";

/**
 * How a subscribe started:
 * - `live`: neither positioned nor recoverable: live from now, no offset in the reply;
 * - `positioned`: positioned or recoverable, not recovering: live after `offset`, the stream's top;
 * - `recovered`: recovering from `offset` in the stream's epoch: every publication after it follows;
 * - `unrecovered`: recovering from a position the stream no longer has (another epoch, removed by
 *   retention, before the namespace's resume window): answered `recovered: false`, live after `offset`.
 */
export type SubscribeMode = "live" | "positioned" | "recovered" | "unrecovered";

export type Request = { kind: Exclude<RequestKind, "subscribe">; id: number } | { kind: "subscribe"; id: number; mode: SubscribeMode; offset: number };

const KIND_LETTER: { readonly [K in RequestKind]: string } = {
  subscribe: "s",
  unsubscribe: "u",
  publish: "p",
  rpc: "r",
  refresh: "f",
  sub_refresh: "t",
  server_sub: "a",
};
const MODE_LETTER: { readonly [M in SubscribeMode]: string } = { live: "l", positioned: "p", recovered: "r", unrecovered: "n" };
const KINDS = new Map(Object.entries(KIND_LETTER).map(([k, v]) => [v, k as RequestKind]));
const MODES = new Map(Object.entries(MODE_LETTER).map(([k, v]) => [v, k as SubscribeMode]));

/** The native frame id of a request: `cf<kind>:<id>`, a subscribe's `cfs<mode>:<id>:<offset>` (at most 40 characters). */
export function requestId(r: Request): string {
  if (r.kind !== "subscribe") return `cf${KIND_LETTER[r.kind]}:${r.id}`;
  return `cfs${MODE_LETTER[r.mode]}:${r.id}:${r.offset}`;
}

const ID = /^cf([supfrta])([lprn]?):(\d{1,10})(?::(\d{1,16}))?$/;

/** The request a native frame id names, or undefined (an id this door did not make, or none). */
export function requestOf(id: unknown): Request | undefined {
  if (typeof id !== "string") return undefined;
  const m = ID.exec(id);
  if (!m) return undefined;
  const kind = KINDS.get(m[1] as string) as RequestKind;
  const n = Number(m[3]);
  if (kind !== "subscribe") return m[2] === "" && m[4] === undefined ? { kind, id: n } : undefined;
  const mode = MODES.get(m[2] as string);
  if (mode === undefined || m[4] === undefined) return undefined;
  return { kind, id: n, mode, offset: Number(m[4]) };
}
