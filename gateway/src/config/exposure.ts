import { authEnabled } from "./checks.js";
import type { Config } from "./settings.js";

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

/**
 * What the start log warns about: what a gateway leaves open to whom. With authentication off every channel
 * is open to whoever reaches the public port (this host only with the default HOST), `/metrics` and
 * `/v1/stats` too without an admin listener, and the control plane to requests from this host. With it on and
 * no admin listener, `/metrics` and `/v1/stats` are on the public port without credentials. Every key of
 * API_KEYS is an admin key. `adminPort` is the admin listener's port in effect (-1: none).
 */
export function exposureWarnings(
  c: Pick<Config, "jwtSecret" | "jwtPublicKeyFile" | "jwtJwksFile" | "host" | "port" | "apiKeys" | "connectHookUrl">,
  adminPort: number,
): string[] {
  const out: string[] = [];
  if (!authEnabled(c)) {
    const where = LOOPBACK.test(c.host)
      ? `this host only (HOST=${c.host})`
      : `every address that reaches ${c.host}:${c.port} (HOST=${c.host}: the network; the default, auto, is 127.0.0.1 while authentication is off)`;
    const stats = adminPort < 0 ? ", /metrics and /v1/stats" : "";
    const control = c.connectHookUrl
      ? "The control plane (/v1/server/…) refuses every request (a connect hook is set and no API key can be)."
      : "The control plane (/v1/server/…: disconnect users, broadcast, list users' addresses and channels) answers requests from this host (loopback, not through a proxy) only.";
    out.push(
      `AUTHENTICATION IS OFF: open to ${where}: subscribing to and publishing on every channel, history, last values and presence lists${stats}. ${control} Set JWT_SECRET, JWT_PUBLIC_KEY_FILE or JWT_JWKS_FILE (see gateway/AUTH.md)`,
    );
  } else if (adminPort < 0)
    out.push(
      `ADMIN_PORT=off: /metrics and /v1/stats are served on the public port (${c.host}:${c.port}) to anyone, without credentials; the control plane is there too (API key with the admin scope)`,
    );
  if (c.apiKeys.length > 0)
    out.push(
      `API_KEYS: each of its ${c.apiKeys.length} key(s) is an admin key (publish, read and the control plane: disconnect users, broadcast, list users' addresses); give each backend a key with only the scopes it needs in API_KEYS_FILE`,
    );
  return out;
}
