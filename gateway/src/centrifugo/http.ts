import { refusal, type AccessControl, type Knock } from "../auth/access.js";
import { fromThisHost, hookHeaders } from "../auth/http-auth.js";
import { readBody, send, track, type ResState } from "../http/respond.js";
import type { Logger } from "../log.js";
import { DATA_TOO_DEEP, jsonNestsDeeper, MAX_DATA_DEPTH } from "../protocol/depth.js";
import { hasHugeNumber, HUGE_NUMBER } from "../protocol/json-numbers.js";
import type { HttpResponse, TemplatedApp } from "../uws.js";
import { ApiCode, apiErrorOf, fail, transportStatus, type ApiError } from "./codes.js";
import type { Caller } from "./context.js";
import { isMethod, parseCommands } from "./request.js";
import type { ServerApi } from "./server-api.js";

/** Where Centrifugo's HTTP server API is served: `POST /api/<method>`, and `POST /api` with commands. */
export const API_PATH = "/api";

/** The API key of a request, as Centrifugo reads it: `X-API-Key`, else `Authorization: apikey <key>`. */
export function apiKeyOf(xApiKey: string, authorization: string): string | undefined {
  if (xApiKey !== "") return xApiKey;
  const [scheme, key, extra] = authorization.trim().split(/\s+/);
  return scheme?.toLowerCase() === "apikey" && key && extra === undefined ? key : undefined;
}

export type ServerApiDoor = { api: ServerApi; access: AccessControl; maxBodyBytes: number; log: Logger };

const write = (res: HttpResponse, st: ResState, status: number, body: unknown): void => send(res, st, status, JSON.stringify(body));
const writeError = (res: HttpResponse, st: ResState, status: number, e: { error: ApiError }): void => write(res, st, status, e);

/**
 * The server API's HTTP door (docs/backends.md). Before any method: not a POST (405), a browser page
 * (`Origin`: 403; the API is for backends), then the chain's first half on the API key (401 with code 101).
 * A method's refusal or failure is `{"error":{code,message}}` with status 200, as Centrifugo answers (with
 * `X-Centrifugo-Error-Mode: transport`, the status its error maps to); a body that is not JSON is 400 (107),
 * an unknown method of `/api/<method>` 404 (104).
 */
export function registerServerApiRoutes(app: TemplatedApp, d: ServerApiDoor): void {
  const handler = (res: HttpResponse, req: Parameters<Parameters<TemplatedApp["any"]>[1]>[1]): void => {
    const st = track(res);
    if (req.getMethod().toLowerCase() !== "post") return writeError(res, st, 405, fail(ApiCode.BadRequest, "use POST with a JSON body"));
    const origin = req.getHeader("origin");
    if (origin !== "")
      return writeError(res, st, 403, fail(ApiCode.PermissionDenied, `the server API takes no requests from browser pages (Origin: ${origin.slice(0, 200)})`));
    const url = req.getUrl();
    const method = url === API_PATH || url === `${API_PATH}/` ? undefined : url.slice(API_PATH.length + 1);
    const ip = Buffer.from(res.getRemoteAddressAsText()).toString();
    const local = fromThisHost(ip, (h) => req.getHeader(h));
    const key = apiKeyOf(req.getHeader("x-api-key"), req.getHeader("authorization"));
    // No bearer token is read: the server API is for backends, which hold keys.
    const knock: Knock = { transport: "http", ip, headers: hookHeaders(d.access, req), ...(key !== undefined ? { apiKey: key } : {}) };
    const transportMode = req.getHeader("x-centrifugo-error-mode").toLowerCase() === "transport";
    // The body is read now or never: uWS gives it to handlers registered before the first await.
    const body = readBody(res, st, d.maxBodyBytes);
    void serve(d, res, st, { method, knock, local, transportMode }, body).catch((e: unknown) => {
      d.log.error({ err: e }, "server api request failed");
      writeError(res, st, 500, fail(ApiCode.Internal, "internal error"));
    });
  };
  app.any(API_PATH, handler);
  app.any(`${API_PATH}/*`, handler);
}

type Request = { method: string | undefined; knock: Knock; local: boolean; transportMode: boolean };

async function serve(d: ServerApiDoor, res: HttpResponse, st: ResState, r: Request, reading: ReturnType<typeof readBody>): Promise<void> {
  let who: Caller;
  try {
    who = { identity: await d.access.identify(r.knock), knock: r.knock, local: r.local };
  } catch (e) {
    const refused = refusal(e);
    return writeError(res, st, refused.status, { error: apiErrorOf(refused) });
  }
  const b = await reading;
  if (b === undefined) return;
  if (b === "too_large") return writeError(res, st, 413, fail(ApiCode.LimitExceeded, `body is larger than ${d.maxBodyBytes} bytes`));
  const text = b.toString("utf8");
  // A publication's data sits at most four levels down (a batch's commands, a command, its params).
  if (jsonNestsDeeper(text, MAX_DATA_DEPTH + 4)) return writeError(res, st, 400, fail(ApiCode.BadRequest, DATA_TOO_DEEP));
  if (r.method !== undefined) return one(d, res, st, r, who, r.method, text);
  const commands = parseCommands(text);
  if ("error" in commands) return writeError(res, st, 400, fail(ApiCode.BadRequest, commands.error));
  if (hasHugeNumber(text, commands)) return writeError(res, st, 400, fail(ApiCode.BadRequest, HUGE_NUMBER));
  const lines: string[] = [];
  for (const c of commands) {
    const id = c.id !== undefined ? { id: c.id } : {};
    const reply =
      "bad" in c ? fail(ApiCode.BadRequest, c.bad) : c.method === "batch" ? await d.api.batch(c.params, who) : await d.api.call(c.method, c.params, who);
    lines.push(JSON.stringify({ ...id, ...("error" in reply ? reply : { result: "replies" in reply ? reply : reply.result }) }));
  }
  send(res, st, 200, lines.join("\n"));
}

/** `POST /api/<method>`: the body is the method's parameters; the answer `{"result"}` or `{"error"}` (batch: `{"replies"}`). */
async function one(d: ServerApiDoor, res: HttpResponse, st: ResState, r: Request, who: Caller, method: string, text: string): Promise<void> {
  if (method !== "batch" && !isMethod(method)) return writeError(res, st, 404, fail(ApiCode.MethodNotFound, `method not found: ${method.slice(0, 64)}`));
  let params: unknown;
  try {
    params = text.trim() === "" ? {} : (JSON.parse(text) as unknown);
  } catch {
    return writeError(res, st, 400, fail(ApiCode.BadRequest, "body is not valid JSON"));
  }
  if (hasHugeNumber(text, params)) return writeError(res, st, 400, fail(ApiCode.BadRequest, HUGE_NUMBER));
  const reply = method === "batch" ? await d.api.batch(params, who) : await d.api.call(method, params, who);
  const status = "error" in reply && r.transportMode ? transportStatus(reply.error.code) : 200;
  write(res, st, status, reply);
}
