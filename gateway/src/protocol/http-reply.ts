import type { ServerResponse } from "node:http";
import { WIRE_ERRORS } from "../errors.js";
import type { HttpResponse } from "../uws.js";
import { ErrorCode } from "./codes.js";

/**
 * HTTP replies of every door, in one place: the status lines, and the error body `{error, message,
 * temporary}` (PROTOCOL.md "Error codes") with the headers an error carries. uWS (the public port: HTTP,
 * SSE, the WebSocket upgrade) and node:http (the primary's admin listener) write the same bytes.
 */
const REASONS: Record<number, string> = {
  200: "OK",
  201: "Created",
  204: "No Content",
  304: "Not Modified",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  410: "Gone",
  413: "Payload Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Content",
  426: "Upgrade Required",
  429: "Too Many Requests",
  500: "Internal Server Error",
  501: "Not Implemented",
  502: "Bad Gateway",
  503: "Service Unavailable",
};

/** `"404 Not Found"`: the status line uWS' `writeStatus` takes. */
export const statusLine = (status: number): string => `${status} ${REASONS[status] ?? "Status"}`;

/** An error to answer: its code, and the status and `temporary` that default to the code's (errors.ts). */
export type ErrorReply = { code: ErrorCode; message: string; status?: number; temporary?: boolean; retryAfterSec?: number };

/** The status an error answers with. */
export const statusOf = (e: ErrorReply): number => e.status ?? WIRE_ERRORS[e.code].status;

/** The body of an error: `{"error":code,"message":…,"temporary":…}`. */
export const errorBody = (e: ErrorReply): string =>
  JSON.stringify({ error: e.code, message: e.message, temporary: e.temporary ?? WIRE_ERRORS[e.code].temporary });

/** The headers an error carries besides its content type: a challenge with 401, `Retry-After` when given. */
function errorHeaders(e: ErrorReply, status: number): Record<string, string> {
  const h: Record<string, string> = {};
  if (status === 401) h["www-authenticate"] = 'Bearer realm="fanout-gateway", error="invalid_token"';
  if (e.retryAfterSec !== undefined) h["retry-after"] = String(e.retryAfterSec);
  return h;
}

/** Writes a whole uWS response (the caller corks when it answers after an await). */
export function writeUws(res: HttpResponse, status: number, body: string, contentType = "application/json", headers?: Record<string, string>): void {
  res.writeStatus(statusLine(status)).writeHeader("content-type", contentType);
  if (headers) for (const [k, v] of Object.entries(headers)) res.writeHeader(k, v);
  res.end(body);
}

/** Writes an error as a whole uWS response; `headers` adds to the error's own (CORS, say). */
export function writeUwsError(res: HttpResponse, e: ErrorReply, headers?: Record<string, string>): void {
  const status = statusOf(e);
  writeUws(res, status, errorBody(e), "application/json", { ...errorHeaders(e, status), ...headers });
}

/** The same on node:http (the admin listener). */
export function writeNodeError(res: ServerResponse, e: ErrorReply): void {
  const status = statusOf(e);
  res.writeHead(status, { "content-type": "application/json", ...errorHeaders(e, status) }).end(errorBody(e));
}

/**
 * A state-changing request (publish, batch, the control plane) must say it sends JSON: a page of any site may
 * send a form or `text/plain` to any address without asking, but JSON only after a CORS preflight, which the
 * gateway does not grant. The parameters (`; charset=utf-8`) do not matter. Undefined when `contentType` is one of
 * `accepted`.
 */
export function unsupportedMedia(contentType: string, accepted: readonly string[] = ["application/json"]): ErrorReply | undefined {
  const type = (contentType.split(";")[0] ?? "").trim().toLowerCase();
  if (accepted.includes(type)) return undefined;
  return {
    code: ErrorCode.UnsupportedMediaType,
    message: `send Content-Type: ${accepted.join(" or ")} (${type ? `not ${type}` : "none was given"}); requests that change state take JSON only`,
  };
}
