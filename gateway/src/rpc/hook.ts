import { BackendCaller, type CallResult } from "../backend/caller.js";
import type { HooksSection } from "../config/sections/index.js";
import { GatewayError } from "../errors.js";
import type { Logger } from "../log.js";
import { ErrorCode } from "../protocol/codes.js";
import { hookFailed, hookSecrets, parseObject, type Claims } from "../auth/hooks.js";
import { rpcBody, type ProxyWho } from "../auth/centrifugo-hooks.js";
import { dataOf, HookDisconnect, readProxyAnswer } from "../backend/proxy-format.js";

/** What the RPC hook is sent (POST JSON), once per `rpc` frame: never cached. */
export type RpcHookRequest = {
  method: string;
  /** The frame's `data` as the client sent it (null when it sent none). */
  data: unknown;
  /** The named user (a token's `sub`, or the connect hook's `user`), or null. */
  user: string | null;
  /** The connection's client id (as presence and events name it). */
  client: string;
  /** The connection's claims (token and connect hook merged), or null when nothing named the user. */
  claims: Claims | null;
  ip: string;
  /** The connect hook's `info`, or null. */
  info: unknown;
};

/** The backend's answer: `data` for the client. */
export type RpcAnswer = { data: unknown };

/** The backend answered with an error: passed to the client as `rpc_error` with the backend's own code. */
export class RpcError extends GatewayError {
  /** `appCode`: the backend's own code (`error.code` of its answer), passed on as it is. */
  constructor(message: string, appCode: string | undefined, temporary: boolean) {
    super(ErrorCode.RpcError, message, { temporary, appCode });
  }
}

const MAX_MESSAGE = 1_000;
const MAX_APP_CODE = 64;

/**
 * Reads the RPC hook's answer: `{"data": …}` (data may be absent: null), or
 * `{"error": {"code"?, "message"?, "temporary"?}}`. A bad status or malformed answer is `hook_unavailable`
 * (temporary), as a hook that does not answer: the call failed, not the method; an answer over
 * HOOK_MAX_ANSWER_BYTES is `hook_unavailable`, not temporary. Pure (unit-tested).
 */
export function readRpcAnswer(res: CallResult): RpcAnswer {
  if ("failed" in res) throw hookFailed("rpc", res);
  const a = parseObject(res.text);
  if (!res.ok || a === undefined)
    throw new GatewayError(ErrorCode.HookUnavailable, `the rpc hook answered ${res.ok ? "no JSON object" : `HTTP ${res.status}`}; retry later`);
  if (a.error === undefined || a.error === null) return { data: a.data ?? null };
  const e = a.error;
  if (typeof e !== "object" || Array.isArray(e))
    throw new GatewayError(ErrorCode.HookUnavailable, 'the rpc hook\'s "error" is not an object {code?, message?, temporary?}; retry later');
  const { code, message, temporary } = e as Record<string, unknown>;
  const appCode = typeof code === "string" || (typeof code === "number" && Number.isFinite(code)) ? String(code).slice(0, MAX_APP_CODE) : undefined;
  const text =
    typeof message === "string" && message ? message.slice(0, MAX_MESSAGE) : `the application answered with an error${appCode ? ` (${appCode})` : ""}`;
  throw new RpcError(text, appCode, temporary === true);
}

/**
 * Reads a Centrifugo-format RPC answer: `result.data` (or `result.b64data`, passed on as its base64 text; none:
 * null), `error` as `rpc_error` with its code as `appCode` (its `temporary` passed on), `disconnect` as
 * HookDisconnect (the socket is closed with its code). Pure (unit-tested).
 */
export function readCentrifugoRpcAnswer(res: CallResult): RpcAnswer {
  if ("failed" in res) throw hookFailed("rpc", res);
  const raw = parseObject(res.text);
  if (!res.ok || raw === undefined)
    throw new GatewayError(ErrorCode.HookUnavailable, `the rpc hook answered ${res.ok ? "no JSON object" : `HTTP ${res.status}`}; retry later`);
  const a = readProxyAnswer("rpc", raw);
  if (a.kind === "disconnect") throw new HookDisconnect("rpc refused", { code: a.code, reason: a.reason });
  if (a.kind === "error") throw new RpcError(a.message || `the application answered with an error (${a.code})`, String(a.code), a.temporary);
  const d = dataOf("rpc", a.result);
  return { data: d === undefined ? null : "data" in d ? d.data : Buffer.from(d.bytes).toString("base64") };
}

/**
 * The RPC hook (RPC_HOOK_URL), Centrifugo's RPC proxy as the model: each `rpc` a client sends, once the
 * authorization chain allowed its method, is POSTed to the backend through its own BackendCaller (deadline
 * RPC_HOOK_TIMEOUT, at most HOOK_MAX_IN_FLIGHT open per process, signed with HOOK_SECRET_FILE's secrets,
 * metrics under hook `rpc`, answers read up to HOOK_MAX_ANSWER_BYTES). Fails closed: no answer, a refused
 * connection, a non-2xx status or a malformed answer is `hook_unavailable` (temporary).
 */
export class RpcHook {
  private readonly caller: BackendCaller;

  constructor(
    private readonly config: Pick<HooksSection, "rpcUrl" | "rpcTimeoutMs" | "maxInFlight" | "maxAnswerBytes" | "secretFile" | "formats">,
    log: Logger,
  ) {
    const { rpcTimeoutMs: timeoutMs, maxInFlight, maxAnswerBytes } = config;
    this.caller = new BackendCaller({ timeoutMs, maxInFlight, maxAnswerBytes, secrets: hookSecrets(config) }, log);
  }

  /**
   * Calls the backend (in Centrifugo's format with RPC_HOOK_FORMAT=centrifugo, the connection as `conn` names
   * it, `meta` the token's meta claim); resolves with its data, or rejects with `rpc_error` (RpcError),
   * `hook_unavailable` or HookDisconnect.
   */
  async call(r: RpcHookRequest, conn?: { transport: string; protocol: string; meta?: unknown }): Promise<RpcAnswer> {
    const centrifugo = this.config.formats.rpc === "centrifugo";
    const who: ProxyWho = {
      client: r.client,
      transport: conn?.transport ?? "websocket",
      protocol: conn?.protocol ?? "json",
      user: r.user ?? "",
      meta: conn?.meta ?? r.info,
    };
    const res = await this.caller.post("rpc", this.config.rpcUrl, JSON.stringify(centrifugo ? rpcBody(who, r.method, r.data) : r));
    try {
      return centrifugo ? readCentrifugoRpcAnswer(res) : readRpcAnswer(res);
    } catch (e) {
      if (!(e instanceof RpcError) && !(e instanceof HookDisconnect))
        this.caller.warn("rpc", { err: "cause" in res ? res.cause : undefined, status: res.status }, `rpc hook failed: ${(e as Error).message}`);
      throw e;
    }
  }
}
