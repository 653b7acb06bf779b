import { PRESENCE_INFO_BYTES } from "./frames.js";
import { headerJson, lastRead } from "./header-json.js";

/**
 * Who published a message from a WebSocket (either door), stored beside it in this NATS header as one line
 * of JSON (non-ASCII escaped): the Centrifuge protocol's ClientInfo, which that door's publication pushes
 * carry (live, in history, in recovery). Publishes over HTTP or the server API have none, as in Centrifugo.
 */
export const PUBLISHER_HEADER = "Fanout-Publisher";

/** The publisher as Centrifuge's ClientInfo: user ("" for none), client id, the connection's and the subscription's info. */
export type PublisherInfo = Readonly<{ user: string; client: string; conn_info?: unknown; chan_info?: unknown }>;

/** The most bytes of a user or client id kept (longer ones are not stored, nor read back). */
const MAX_ID_BYTES = 256;

/** An info value within the bound the door applies to presence (PRESENCE_INFO_BYTES of JSON); undefined otherwise. */
const bounded = (info: unknown): unknown => (info !== undefined && Buffer.byteLength(JSON.stringify(info) ?? "") <= PRESENCE_INFO_BYTES ? info : undefined);

/** The publisher's info, each `info` kept only within PRESENCE_INFO_BYTES; undefined when the ids are out of bounds. */
export function publisherInfo(user: string | null, client: string, connInfo?: unknown, chanInfo?: unknown): PublisherInfo | undefined {
  const u = user ?? "";
  if (Buffer.byteLength(u) > MAX_ID_BYTES || Buffer.byteLength(client) > MAX_ID_BYTES || client === "") return undefined;
  const conn = bounded(connInfo);
  const chan = bounded(chanInfo);
  return { user: u, client, ...(conn !== undefined ? { conn_info: conn } : {}), ...(chan !== undefined ? { chan_info: chan } : {}) };
}

/** The header's value: JSON on one line, non-ASCII escaped. */
export const publisherHeader = (p: PublisherInfo): string => headerJson(p);

/**
 * The stored header of a message as the broker hands it over (its text, not read yet): only the Centrifuge
 * codecs and the server API's history read it, so a worker with no socket of that door never parses one.
 */
export type StoredPublisher = string;

/** The publisher of a stored header (`storedPublisher`), parsed once per worker (the last one read is remembered). */
export const readPublisher: (text: StoredPublisher | undefined) => PublisherInfo | undefined = lastRead((text) => storedPublisher(text));

/**
 * A stored header's publisher: undefined when absent or not what this gateway writes (a NATS client may set the
 * header to anything: a value that is not such an object with string ids within the bounds is ignored).
 */
export function storedPublisher(value: string | undefined): PublisherInfo | undefined {
  if (!value || value.length > 16 * PRESENCE_INFO_BYTES) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(value);
  } catch {
    return undefined;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined;
  const o = v as Record<string, unknown>;
  if (typeof o.user !== "string" || typeof o.client !== "string") return undefined;
  return publisherInfo(o.user, o.client, o.conn_info, o.chan_info);
}
