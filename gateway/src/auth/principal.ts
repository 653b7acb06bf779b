import { ALLOW_ALL, type Permissions } from "./permissions.js";

/** Who is on the other end of a connection or request, and what it may do. */
export type Principal = {
  /** The user (JWT `sub`); durable consumer names are scoped by it. */
  readonly user: string;
  readonly perms: Permissions;
  /** Token expiry (unix seconds); absent for anonymous and API-key principals. */
  readonly exp?: number;
  /**
   * The token's `meta` claim (Centrifugo's): private to the application, never shown to clients; the hooks in
   * Centrifugo's format get it as `meta`.
   */
  readonly meta?: unknown;
  /**
   * The token's `info` claim (Centrifugo's): what the connection shows of itself, its `conn_info` in what it
   * publishes and in the presence entries it makes (else the connect hook's `info`). A `refresh` replaces it.
   */
  readonly info?: unknown;
  /** An API key's scopes (API_KEYS_FILE; every key of API_KEYS is `admin`); absent for everyone else. */
  readonly scopes?: readonly Scope[];
};

/**
 * What an API key may do: `publish` (HTTP publish and batches, also where a namespace switched client
 * publishing off), `read` (history, last values, presence lists, SSE) and `admin` (the control plane), which
 * includes the other two: a broadcast publishes.
 */
export const SCOPES = ["publish", "read", "admin"] as const;
export type Scope = (typeof SCOPES)[number];

/** Whether an API key principal holds `scope` (`admin` holds every scope). */
export const hasScope = (p: Principal, scope: Scope): boolean => !!p.scopes && (p.scopes.includes(scope) || p.scopes.includes("admin"));

/** Every connection when authentication is off: may do everything. */
export const ANONYMOUS: Principal = Object.freeze({ user: "anon", perms: ALLOW_ALL });

/** An HTTP request carrying a configured API key (a trusted backend): every channel, within the key's scopes. */
export const apiKeyPrincipal = (scopes: readonly Scope[]): Principal =>
  Object.freeze({ user: "api-key", perms: ALLOW_ALL, scopes: Object.freeze([...scopes]) });
