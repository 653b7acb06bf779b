/** Why a credential was refused. `missing` and `invalid`/`expired` map to HTTP 401. */
export type AuthFailure = "missing" | "invalid" | "expired" | "claims";

/** A refused token or API key. The message is safe to show the client (it never echoes the token). */
export class AuthError extends Error {
  constructor(readonly reason: AuthFailure, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "AuthError";
  }
}
