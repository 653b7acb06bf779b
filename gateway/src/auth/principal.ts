import { ALLOW_ALL, type Permissions } from "./permissions.js";

/** Who is on the other end of a connection or request, and what it may do. */
export type Principal = {
  /** The user (JWT `sub`); durable consumer names are scoped by it. */
  readonly user: string;
  readonly perms: Permissions;
  /** Token expiry (unix seconds); absent for anonymous and API-key principals. */
  readonly exp?: number;
};

/** Every connection when authentication is off: may do everything. */
export const ANONYMOUS: Principal = Object.freeze({ user: "anon", perms: ALLOW_ALL });

/** An HTTP request carrying a configured API key (trusted backends): publish and history on any channel. */
export const API_KEY_PRINCIPAL: Principal = Object.freeze({ user: "api-key", perms: ALLOW_ALL });
