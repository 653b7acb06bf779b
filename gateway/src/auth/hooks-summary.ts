import type { HooksSection } from "../config/sections/index.js";
import { hookSecrets } from "./hooks.js";

/** A hook URL as the start log shows it: no user, password or query (where credentials may hide). */
function shown(url: string): string {
  const u = new URL(url);
  u.username = "";
  u.password = "";
  u.search = "";
  return u.toString();
}

/**
 * What the start log says of the backend hooks: each one set (connect, subscribe, publish, rpc, refresh,
 * subRefresh), where it calls and, when any speaks Centrifugo's format, each one's format, and whether their requests are signed (HOOK_SECRET_FILE: the file and how many secrets it holds, never
 * a secret). Undefined when no hook and no secret file is set. Reads the secret file: an unreadable one throws.
 */
export function hooksSummary(h: HooksSection): Record<string, unknown> | undefined {
  const urls = {
    connect: h.connectUrl,
    subscribe: h.subscribeUrl,
    publish: h.publishUrl,
    rpc: h.rpcUrl,
    refresh: h.refreshUrl,
    subRefresh: h.subRefreshUrl,
  };
  const set = Object.entries(urls).filter(([, u]) => u !== "");
  if (set.length === 0 && !h.secretFile) return undefined;
  return {
    hooks: Object.fromEntries(set.map(([k, u]) => [k, shown(u)])),
    // Only the hooks that are set, and only when one of them speaks Centrifugo's format.
    ...(set.some(([k]) => h.formats[k as keyof typeof h.formats] === "centrifugo")
      ? { formats: Object.fromEntries(set.map(([k]) => [k, h.formats[k as keyof typeof h.formats]])) }
      : {}),
    signed: h.secretFile ? { secretFile: h.secretFile, secrets: hookSecrets(h).length } : false,
    timeoutMs: h.timeoutMs,
    ...(h.rpcUrl ? { rpcTimeoutMs: h.rpcTimeoutMs } : {}),
  };
}
