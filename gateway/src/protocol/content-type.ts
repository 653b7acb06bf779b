/**
 * Binary payloads: bytes published with a content type (issue 36). The type is stored beside the bytes in
 * this NATS header; a message without it (everything published as JSON) takes the JSON path as before, and
 * a NATS client may set it on its own publishes. `application/json` is the same as no type.
 */
export const CONTENT_TYPE_HEADER = "Fanout-Content-Type";

/** The type HTTP bytes are published with, and a binary `pub` without `type`. */
export const OCTET_STREAM = "application/octet-stream";

/** A media type `type/subtype` in RFC 6838's restricted names (it is written into a NATS header as it is). */
const MEDIA_TYPE = /^[A-Za-z0-9][\w!#$&^.+-]{0,62}\/[A-Za-z0-9][\w!#$&^.+-]{0,62}$/;

/** The content type bytes are stored with, or why `t` is none: a media type, not JSON's (send a value). */
export function checkContentType(t: unknown): { ok: true; type: string } | { ok: false; reason: string } {
  if (typeof t !== "string" || !MEDIA_TYPE.test(t)) return { ok: false, reason: "type must be a media type like application/octet-stream" };
  const type = t.toLowerCase();
  if (type === "application/json") return { ok: false, reason: "bytes are not published as application/json: publish the JSON value as data" };
  return { ok: true, type };
}

/**
 * A stored header's type as messages carry it: undefined when absent, empty or JSON's (the JSON path). A NATS
 * client may set the header to anything: a value that is not a media type by the rules an HTTP or WebSocket
 * publisher is held to (MEDIA_TYPE: at most 127 characters) is read as `application/octet-stream`, so the
 * payload still goes as bytes and no client is handed a type the gateway would not accept itself.
 */
export function storedType(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const t = value.trim().toLowerCase();
  if (t === "" || t === "application/json") return undefined;
  return MEDIA_TYPE.test(t) ? t : OCTET_STREAM;
}
