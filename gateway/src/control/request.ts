import { ErrorCode } from "../protocol/codes.js";
import { unsupportedMedia, type ErrorReply } from "../protocol/http-reply.js";
import { isControlOp, type ControlOp } from "./ops.js";

export const CONTROL_PATH = "/v1/server/";

/** The request headers the control doors look at before the authorization chain. */
export type ControlHeaders = { origin: string; contentType: string };

/**
 * What both HTTP doors of the control plane (the public port's and the admin listener's) answer before the
 * authorization chain: a path that is no operation, a request from a browser page (it sends `Origin`; the
 * control plane is for operators and backends, never for pages), and a POST whose body is not declared JSON.
 */
export function controlGate(
  method: string,
  path: string,
  query: string,
  h: ControlHeaders,
): { op: ControlOp; input: "body" | Record<string, unknown> } | ErrorReply {
  const r = controlRequestOf(method, path, query);
  if ("code" in r) return r;
  if (h.origin !== "")
    return { code: ErrorCode.Forbidden, message: `the control plane takes no requests from browser pages (Origin: ${h.origin.slice(0, 200)})` };
  return r.input === "body" ? (unsupportedMedia(h.contentType) ?? r) : r;
}

/**
 * The operation an HTTP request names, and its input as the operation reads it: the JSON body of a POST,
 * the query of `GET /v1/server/occupancy`, the user of `GET /v1/server/users/{user}`. Both HTTP doors (the
 * public port's and the admin listener's) read requests with this.
 */
export function controlRequestOf(
  method: string,
  path: string,
  query: string,
): { op: ControlOp; input: "body" | Record<string, unknown> } | { code: ErrorCode; message: string } {
  const rest = path.slice(CONTROL_PATH.length);
  const m = method.toUpperCase();
  if (rest.startsWith("users/")) {
    if (m !== "GET") return { code: ErrorCode.MethodNotAllowed, message: "use GET" };
    try {
      const user = decodeURIComponent(rest.slice("users/".length));
      return { op: "user", input: { user } };
    } catch {
      return { code: ErrorCode.BadRequest, message: "the user is not valid percent-encoding" };
    }
  }
  if (rest === "occupancy") {
    if (m !== "GET") return { code: ErrorCode.MethodNotAllowed, message: "use GET" };
    const q = new URLSearchParams(query);
    return { op: "occupancy", input: Object.fromEntries([...q.entries()].filter(([k]) => k === "channel" || k === "pattern")) };
  }
  if (isControlOp(rest) && rest !== "user")
    return m === "POST" ? { op: rest, input: "body" } : { code: ErrorCode.MethodNotAllowed, message: "use POST with a JSON body" };
  return { code: ErrorCode.NotFound, message: `no control operation ${path}` };
}

/** A request body as JSON: the value, or undefined when it is not JSON (the operation then answers bad_request). */
export function bodyJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8")) as unknown;
  } catch {
    return undefined;
  }
}
