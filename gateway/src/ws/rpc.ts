import { claimsOf } from "../auth/hooks.js";
import { GatewayError } from "../errors.js";
import { ErrorCode } from "../protocol/codes.js";
import type { RpcFrame } from "../protocol/frames.js";
import { RpcError, type RpcHookRequest } from "../rpc/hook.js";
import { authorized, replyRefusal } from "./authorized.js";
import type { HandlerContext } from "./context.js";
import { clientIdOf, sendEncoded, sendErr, sendFrame, type Socket } from "./session.js";

/**
 * `rpc`: the method permission (the authorization chain), the connection's cap of unanswered calls, then the
 * backend's answer as `ok` with its `data`, or `err`: `rpc_error` with the backend's own code and
 * `temporary`, `hook_unavailable` (temporary) when it did not answer, and (not temporary) when its answer
 * does not fit in MAX_PAYLOAD_BYTES. The backend is asked only once the chain allowed the method.
 */
export async function callRpc(ctx: HandlerContext, ws: Socket, f: RpcFrame): Promise<void> {
  const s = ws.getUserData();
  const err = (code: ErrorCode, message: string, temporary?: boolean) => sendErr(ws, ctx.metrics.badFrames, f.id, code, message, temporary);
  if (!ctx.rpc) return err(ErrorCode.RpcUnavailable, "this gateway answers no rpc (it has no RPC_HOOK_URL)");
  if (ctx.isDraining()) return err(ErrorCode.ShuttingDown, "server is shutting down; reconnect");
  const max = ctx.config.hooks.rpcMaxInFlight;
  if (s.rpcInFlight >= max) return err(ErrorCode.RateLimited, `at most ${max} rpc calls unanswered per connection: wait for an answer`);
  s.rpcInFlight++;
  try {
    if (!(await authorized(ctx, ws, f.id, { right: "rpc", method: f.method }))) return;
    const id = s.identity;
    const request: RpcHookRequest = {
      method: f.method,
      data: f.data,
      user: id.identified ? id.principal.user : null,
      client: clientIdOf(ws),
      claims: id.identified ? claimsOf(id.principal) : null,
      ip: id.ip,
      info: id.info ?? null,
    };
    const conn = { transport: "websocket", protocol: s.codec.name, ...(id.principal.meta !== undefined ? { meta: id.principal.meta } : {}) };
    const answer = await ctx.rpc.call(request, conn);
    let frame: string | Uint8Array;
    try {
      frame = s.codec.encode({ op: "ok", id: f.id, fields: { data: answer.data } });
    } catch {
      // The MessagePack encoder refuses values nested more than 100 levels deep.
      return err(ErrorCode.HookUnavailable, `the rpc hook's answer to ${f.method} cannot be encoded in ${s.codec.name} (nested too deep)`, false);
    }
    // The client's frames are bounded by MAX_PAYLOAD_BYTES; so are the answers it gets (a client may hold it to that).
    const maxBytes = ctx.config.server.maxPayloadBytes;
    if ((typeof frame === "string" ? Buffer.byteLength(frame) : frame.length) > maxBytes)
      return err(ErrorCode.HookUnavailable, `the rpc hook's answer to ${f.method} is larger than MAX_PAYLOAD_BYTES (${maxBytes} bytes)`, false);
    sendEncoded(ws, frame);
  } catch (e) {
    if (e instanceof RpcError) {
      if (s.closed) return;
      ctx.metrics.badFrames.labels(e.code).inc();
      return sendFrame(ws, { op: "err", id: f.id, code: ErrorCode.RpcError, message: e.message, temporary: e.temporary, appCode: e.appCode });
    }
    if (e instanceof GatewayError) return replyRefusal(ctx, ws, f.id, e);
    throw e;
  } finally {
    s.rpcInFlight--;
  }
}
