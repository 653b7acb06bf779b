import type { HooksSection } from "../config/sections/index.js";
import type { Logger } from "../log.js";
import { RpcHook } from "./hook.js";

/** The RPC hook when RPC_HOOK_URL is set (WebSocket `rpc` frames go to the backend through it); undefined otherwise. */
export function startRpc(config: HooksSection, log: Logger): RpcHook | undefined {
  return config.rpcUrl ? new RpcHook(config, log) : undefined;
}
