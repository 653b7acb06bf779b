import type { Sections } from "../config/sections/index.js";
import type { Logger } from "../log.js";
import type { WorkerState } from "../metrics/worker-state.js";
import { AccessControl } from "./access.js";
import { Authenticator } from "./authenticator.js";
import { hooksOf, type Hooks } from "./hooks.js";

/**
 * A worker's authorization chain (auth/access.ts), which every door passes: its key material is read here,
 * once; the connect, subscribe and publish hooks when any is set, their answer caches in `state`.
 */
export function startAccess(c: Pick<Sections, "auth" | "hooks" | "namespaces">, log: Logger, state: WorkerState): { access: AccessControl; hooks?: Hooks } {
  const auth = new Authenticator(c.auth);
  const hooks = hooksOf(c.hooks, log);
  const access = new AccessControl(auth, hooks, log, c.namespaces);
  state.add({
    hook_cache_connect: () => hooks?.cacheSizes.connect ?? 0,
    hook_cache_subscribe: () => hooks?.cacheSizes.subscribe ?? 0,
  });
  return { access, hooks };
}
