import { GatewayError } from "../errors.js";
import { ErrorCode } from "../protocol/codes.js";

/**
 * Centrifugo's proxy format (its HTTP proxy to the application backend: connect, refresh, subscribe, publish,
 * sub_refresh, RPC), as the hooks speak it with HOOK_FORMAT=centrifugo: the fields every request starts with,
 * and how an answer is read. Pure: the hooks (auth/hooks.ts, rpc/hook.ts) build their bodies with it and turn
 * what it reads into their decisions. docs/backends.md maps each field.
 */

/** The fields every Centrifugo proxy request starts with. */
export type ProxyBase = {
  /** The connection's client id ("" for an HTTP request, which has none). */
  client: string;
  /** `websocket`, `sse` or `http` (one HTTP request: history, presence list, publish). */
  transport: string;
  /** The connection's frame encoding: `json`, or `msgpack` for the binary subprotocol (Centrifugo's `protobuf`). */
  protocol: string;
  /** `json`: `data` holds a JSON value; `binary`: `b64data` holds bytes in base64. */
  encoding: "json" | "binary";
};

/** What a Centrifugo answer says, read: `disconnect` first, then `error`, then `result` (Centrifugo's order). */
export type ProxyAnswer =
  | { kind: "result"; result: Record<string, unknown> }
  | { kind: "error"; code: number; message: string; temporary: boolean }
  | { kind: "disconnect"; code: number; reason: string };

/** The longest close reason a WebSocket close frame holds (RFC 6455: 123 bytes). */
const MAX_REASON_BYTES = 123;
const MAX_MESSAGE = 1_000;

/** A malformed answer: `hook_unavailable`, temporary (the call failed, as when the hook does not answer). */
export const malformed = (hook: string, why: string): GatewayError =>
  new GatewayError(ErrorCode.HookUnavailable, `the ${hook} hook's answer is malformed: ${why}; retry later`);

/**
 * Reads a Centrifugo answer object. One of `disconnect`, `error`, `result` must be there: Centrifugo reads `{}`
 * as an empty result, this gateway as malformed, so that a hook answering in another format (`{"allow":false}`)
 * never allows. A `disconnect` code must be a close code an application may send (3000–4999).
 */
export function readProxyAnswer(hook: string, a: Record<string, unknown>): ProxyAnswer {
  const obj = (k: string): Record<string, unknown> | undefined => {
    const v = a[k];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "object" || Array.isArray(v)) throw malformed(hook, `"${k}" is not an object`);
    return v as Record<string, unknown>;
  };
  const d = obj("disconnect");
  if (d) {
    if (!Number.isInteger(d.code) || (d.code as number) < 3000 || (d.code as number) > 4999)
      throw malformed(hook, "disconnect.code must be a close code from 3000 to 4999");
    return { kind: "disconnect", code: d.code as number, reason: cutReason(typeof d.reason === "string" ? d.reason : "") };
  }
  const e = obj("error");
  if (e) {
    if (!Number.isInteger(e.code) || (e.code as number) < 0) throw malformed(hook, "error.code must be a whole number");
    const message = typeof e.message === "string" ? e.message.slice(0, MAX_MESSAGE) : "";
    return { kind: "error", code: e.code as number, message, temporary: e.temporary === true };
  }
  const r = obj("result");
  if (r) return { kind: "result", result: r };
  throw malformed(hook, 'it holds none of "result", "error", "disconnect"');
}

/**
 * Centrifugo's client error codes (its `error.code`), and the wire code each is passed to clients as. Any other
 * code (an application's own: Centrifugo asks for 400–1999) refuses with `forbidden`. The code itself is passed
 * on too, as `appCode`.
 */
export const PROXY_ERROR_CODES: Readonly<Record<number, ErrorCode>> = {
  100: ErrorCode.HookUnavailable, // internal
  101: ErrorCode.Unauthorized,
  102: ErrorCode.BadChannel, // unknown channel
  103: ErrorCode.Forbidden, // permission denied
  106: ErrorCode.RateLimited, // limit exceeded
  107: ErrorCode.BadRequest,
  108: ErrorCode.FeatureDisabled, // not available
  109: ErrorCode.Unauthorized, // token expired
  111: ErrorCode.RateLimited, // too many requests
};

/** The refusal an `error` answer is: its mapped wire code, its message and `temporary`, its code as `appCode`. */
export function proxyRefusal(what: string, e: Extract<ProxyAnswer, { kind: "error" }>): GatewayError {
  const code = PROXY_ERROR_CODES[e.code] ?? ErrorCode.Forbidden;
  return new GatewayError(code, `${what} denied by the application${e.message ? `: ${e.message.slice(0, 200)}` : ""}`, {
    temporary: e.temporary,
    appCode: String(e.code),
  });
}

/**
 * A `disconnect` answer: the WebSocket is closed with its code and reason (ws/authorized.ts, ws/guard.ts). Where
 * there is no socket (SSE, an HTTP request) it is this error: `disconnected`, temporary when the code is in a
 * reconnect range (3000–3499, 4000–4499).
 */
export class HookDisconnect extends GatewayError {
  constructor(
    what: string,
    readonly close: { code: number; reason: string },
  ) {
    const reconnect = (close.code >= 3000 && close.code < 3500) || (close.code >= 4000 && close.code < 4500);
    super(ErrorCode.Disconnected, `${what}: the application disconnected this connection (${close.code}${close.reason ? ` ${close.reason}` : ""})`, {
      temporary: reconnect,
      appCode: String(close.code),
    });
    this.name = "HookDisconnect";
  }
}

/** What an answer gives as `data`: `b64data` (decoded) or `data`; absent when it has neither. */
export function dataOf(hook: string, r: Record<string, unknown>): { data: unknown } | { bytes: Uint8Array } | undefined {
  if (typeof r.b64data === "string" && r.b64data !== "") {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(r.b64data) || r.b64data.length % 4 !== 0) throw malformed(hook, "b64data is not base64");
    return { bytes: Buffer.from(r.b64data, "base64") };
  }
  return r.data === undefined ? undefined : { data: r.data };
}

/** `expire_at` (unix seconds): 0 or absent is no expiry. */
export function expireAtOf(hook: string, r: Record<string, unknown>): number | undefined {
  const v = r.expire_at;
  if (v === undefined || v === null || v === 0) return undefined;
  if (!Number.isInteger(v) || (v as number) < 0) throw malformed(hook, "expire_at must be unix seconds");
  return v as number;
}

/**
 * A refresh or sub_refresh answer: a new expiry (undefined: none) and, for a connection, its new `info` (what it
 * shows of itself from then on), or refused (`expired: true`).
 */
export type RefreshOutcome = { expired: false; exp: number | undefined; info?: unknown } | { expired: true };

/** Reads a refresh or sub_refresh `result`; `info` (any JSON but null) replaces the connection's. */
export function readRefreshResult(hook: string, r: Record<string, unknown>): RefreshOutcome {
  if (r.expired === true) return { expired: true };
  return { expired: false, exp: expireAtOf(hook, r), ...(r.info !== undefined && r.info !== null ? { info: r.info } : {}) };
}

/** Cuts a close reason to what a close frame holds, on a character boundary. */
function cutReason(reason: string): string {
  if (Buffer.byteLength(reason) <= MAX_REASON_BYTES) return reason;
  let out = "";
  for (const ch of reason) {
    if (Buffer.byteLength(out + ch) > MAX_REASON_BYTES) break;
    out += ch;
  }
  return out;
}
