import { GatewayError } from "../errors.js";
import { ErrorCode } from "../protocol/codes.js";

/** Why a credential was refused. `missing` and `invalid`/`expired` map to HTTP 401. */
export type AuthFailure = "missing" | "invalid" | "expired" | "claims";

/** A refused token or API key (`unauthorized`, 401, permanent). The message never echoes the token. */
export class AuthError extends GatewayError {
  constructor(
    readonly reason: AuthFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(ErrorCode.Unauthorized, message, options);
    this.name = "AuthError";
  }
}
