import { isControlOp, type ControlOp } from "./ops.js";

export const CONTROL_PATH = "/v1/server/";

/**
 * The operation an HTTP request names, and its input as the operation reads it: the JSON body of a POST,
 * the query of `GET /v1/server/occupancy`, the user of `GET /v1/server/users/{user}`. Both HTTP doors (the
 * public port's and the admin listener's) read requests with this.
 */
export function controlRequestOf(
  method: string,
  path: string,
  query: string,
): { op: ControlOp; input: "body" | Record<string, unknown> } | { status: 404 | 405 | 400; message: string } {
  const rest = path.slice(CONTROL_PATH.length);
  const m = method.toUpperCase();
  if (rest.startsWith("users/")) {
    if (m !== "GET") return { status: 405, message: "use GET" };
    try {
      const user = decodeURIComponent(rest.slice("users/".length));
      return { op: "user", input: { user } };
    } catch {
      return { status: 400, message: "the user is not valid percent-encoding" };
    }
  }
  if (rest === "occupancy") {
    if (m !== "GET") return { status: 405, message: "use GET" };
    const q = new URLSearchParams(query);
    return { op: "occupancy", input: Object.fromEntries([...q.entries()].filter(([k]) => k === "channel" || k === "pattern")) };
  }
  if (isControlOp(rest) && rest !== "user") return m === "POST" ? { op: rest, input: "body" } : { status: 405, message: "use POST with a JSON body" };
  return { status: 404, message: `no control operation ${path}` };
}

/** A request body as JSON: the value, or undefined when it is not JSON (the operation then answers bad_request). */
export function bodyJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8")) as unknown;
  } catch {
    return undefined;
  }
}
