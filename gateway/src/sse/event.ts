/**
 * The Server-Sent Events wire format of the gateway, as pure functions: events of messages, the `gap`
 * event, comment lines, and the reading of start positions (`Last-Event-ID`, `?from_seq=`, `?last=`,
 * `?since=`, `?last_event_id=`). gateway/PROTOCOL.md ("Server-Sent Events") documents it.
 *
 * A message event is `id: <epoch>:<seq>` and `data: <the msg frame>`: the same JSON object a WebSocket
 * client gets, so one parser serves both. Its bytes are built once per message per worker from the `msg`
 * frame (`sseEventOf` keeps them beside the frame), never once per stream.
 */

import type { StartRequest } from "../fanout/resume.js";

const NL = 0x0a;
const CR = 0x0d;
const DATA_LINE_BREAK = Buffer.from("\ndata: ");
const EVENT_END = Buffer.from("\n\n");

/** SSE bytes of each frame object (a live frame or a replay page's), built on first use, with their epoch. */
const built = new WeakMap<Uint8Array, { epoch: string | undefined; ev: Buffer }>();

/** `id:` of a message: the stream's epoch and the seq. */
export const eventId = (epoch: string, seq: number): string => `${epoch}:${seq}`;

/**
 * The event of a `msg` frame: `id: <epoch>:<seq>\ndata: <frame>\n\n`. Without `epoch` (a broker that keeps
 * no history) the event has no id: there is nothing to resume from. Cached per frame object.
 */
export function sseEventOf(frame: Uint8Array, seq: number, epoch: string | undefined): Buffer {
  const hit = built.get(frame);
  if (hit && hit.epoch === epoch) return hit.ev;
  const head = Buffer.from(epoch !== undefined ? `id: ${eventId(epoch, seq)}\ndata: ` : "data: ");
  const ev = Buffer.concat([head, dataLines(frame), EVENT_END]);
  built.set(frame, { epoch, ev });
  return ev;
}

/**
 * A message event with another id: a message the live feed repaired late (older than messages already sent)
 * carries the stream position, the newest seq sent, so that a reconnect resumes after everything it got
 * rather than repeating what followed it. Built per stream; this is the rare path.
 */
export function withEventId(event: Buffer, epoch: string, after: number): Buffer {
  const nl = event.indexOf(NL);
  return Buffer.concat([Buffer.from(`id: ${eventId(epoch, after)}`), event.subarray(nl)]);
}

/**
 * A frame as the value of `data:` lines. Frames are one line, except for a stored payload written by
 * another NATS client with line breaks between JSON tokens: each line becomes a `data:` line, and the
 * client's EventSource joins them with `\n` (JSON whitespace) again.
 */
function dataLines(frame: Uint8Array): Buffer {
  const b = Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength);
  if (b.indexOf(NL) < 0 && b.indexOf(CR) < 0) return b;
  const parts: Buffer[] = [];
  let start = 0;
  for (let i = 0; i < b.length; i++) {
    const c = b[i];
    if (c !== NL && c !== CR) continue;
    parts.push(b.subarray(start, i), DATA_LINE_BREAK);
    if (c === CR && b[i + 1] === NL) i++;
    start = i + 1;
  }
  parts.push(b.subarray(start));
  return Buffer.concat(parts);
}

/** A named event with a one-line JSON `data:` and an optional id. */
export function namedEvent(name: string, data: unknown, id?: string): string {
  return `event: ${name}\n${id === undefined ? "" : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`;
}

/** The first bytes of a stream: the reconnection delay, and a comment so that headers go out at once. */
export const streamPreamble = (retryMs: number): string => `retry: ${retryMs}\n: ok\n\n`;

export const HEARTBEAT = ": hb\n\n";

/**
 * Where a stream starts, as asked: a seq in an epoch (`after`: a Last-Event-ID, or from_seq - 1), the last N
 * messages, a time, or live (now). The starts of the resume path that SSE can ask for.
 */
export type SseStart = Extract<StartRequest, { kind: "live" | "after" | "last" | "time" }>;

export type StartParse = { ok: true; start: SseStart } | { ok: false; message: string };

const MAX_LAST = 1_000_000;
const MAX_ID_LENGTH = 256;

/**
 * Reads a `Last-Event-ID` (or `?last_event_id=`): `<epoch>:<seq>`, or a bare `<seq>` meaning the current
 * epoch. The epoch is everything before the last colon (epochs are timestamps with colons in them).
 */
export function parseEventId(raw: string): { after: number; epoch?: string } | undefined {
  const v = raw.trim();
  if (v.length === 0 || v.length > MAX_ID_LENGTH) return undefined;
  const i = v.lastIndexOf(":");
  const seqText = i < 0 ? v : v.slice(i + 1);
  if (!/^\d{1,16}$/.test(seqText)) return undefined;
  const after = Number(seqText);
  if (!Number.isSafeInteger(after)) return undefined;
  const epoch = i < 0 ? undefined : v.slice(0, i);
  if (epoch !== undefined && epoch.length === 0) return undefined;
  return epoch === undefined ? { after } : { after, epoch };
}

/**
 * The start position of a request. A `Last-Event-ID` header (a reconnecting EventSource) wins over the
 * query, which may name at most one of `from_seq`, `last`, `since`, `last_event_id`.
 */
export function parseStart(query: URLSearchParams, lastEventIdHeader: string): StartParse {
  if (lastEventIdHeader !== "") {
    const id = parseEventId(lastEventIdHeader);
    if (!id) return { ok: false, message: "Last-Event-ID must be <epoch>:<seq> or <seq>" };
    return { ok: true, start: { kind: "after", ...id } };
  }
  const given = ["from_seq", "last", "since", "last_event_id"].filter((k) => query.has(k));
  if (given.length > 1) return { ok: false, message: `give one of from_seq, last, since, last_event_id, not ${given.join(" and ")}` };
  const fromSeq = query.get("from_seq");
  if (fromSeq !== null) {
    const n = Number(fromSeq);
    if (!/^\d+$/.test(fromSeq) || !Number.isSafeInteger(n) || n < 1) return { ok: false, message: "from_seq must be an integer >= 1" };
    return { ok: true, start: { kind: "after", after: n - 1 } };
  }
  const last = query.get("last");
  if (last !== null) {
    const n = Number(last);
    if (!/^\d+$/.test(last) || n < 1 || n > MAX_LAST) return { ok: false, message: `last must be an integer from 1 to ${MAX_LAST}` };
    return { ok: true, start: { kind: "last", last: n } };
  }
  const since = query.get("since");
  if (since !== null) {
    const t = new Date(/^\d+$/.test(since) ? Number(since) : Date.parse(since));
    if (Number.isNaN(t.getTime())) return { ok: false, message: "since must be an ISO-8601 time or milliseconds since 1970" };
    return { ok: true, start: { kind: "time", time: t.toISOString() } };
  }
  const id = query.get("last_event_id");
  if (id !== null) {
    const p = parseEventId(id);
    if (!p) return { ok: false, message: "last_event_id must be <epoch>:<seq> or <seq>" };
    return { ok: true, start: { kind: "after", ...p } };
  }
  return { ok: true, start: { kind: "live" } };
}
