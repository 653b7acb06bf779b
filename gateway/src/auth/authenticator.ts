import { createHash, timingSafeEqual } from "node:crypto";
import { errors as joseErrors, jwtVerify, type JWTPayload } from "jose";
import type { AuthSection } from "../config/sections/index.js";
import { AuthError } from "./errors.js";
import { loadKeyMaterial, type KeyMaterial } from "./keys.js";
import { parseRpcClaim } from "./permissions.js";
import { lifeOf, permissionsOf } from "./centrifugo-claims.js";
import { loadApiKeys } from "./api-keys.js";
import { ANONYMOUS, apiKeyPrincipal, type Principal } from "./principal.js";

const MAX_TOKEN_LENGTH = 8_192;
const MAX_USER_LENGTH = 256;

/** What a verified subscription token grants: read on `channel` until `exp` (unix seconds), for `user` when it names one. */
export type SubscriptionClaims = { channel: string; exp: number; user?: string; info?: unknown };

/** Credentials of an HTTP request, read synchronously from the uWS request. */
export type HttpCredentials = { bearer?: string; apiKey?: string };

/**
 * Turns credentials into a Principal: verifies JWTs with the key material loaded once at construction,
 * and compares API keys in constant time. With authentication off everything is the allow-all ANONYMOUS.
 */
export class Authenticator {
  readonly enabled: boolean;
  private readonly keys: KeyMaterial | undefined;
  /** Each configured API key's hash, and the principal it stands for (its scopes). */
  private readonly apiKeys: { hash: Buffer; principal: Principal }[];

  constructor(private readonly config: AuthSection) {
    this.keys = loadKeyMaterial(config);
    this.enabled = this.keys !== undefined;
    this.apiKeys = loadApiKeys(config).map((k) => ({ hash: sha256(k.key), principal: apiKeyPrincipal(k.scopes) }));
  }

  /** Algorithms accepted (for the startup log). */
  get algorithms(): string[] {
    return this.keys?.algorithms ?? [];
  }

  /** A WebSocket's token: ANONYMOUS when auth is off; rejects with AuthError when missing or invalid. */
  async authenticate(token: string | undefined): Promise<Principal> {
    if (!this.keys) return ANONYMOUS;
    if (token === undefined || token === "")
      throw new AuthError("missing", "a token is required (Authorization: Bearer, Sec-WebSocket-Protocol bearer.<token>, or ?token=)");
    return this.verify(token);
  }

  /** Verifies a JWT and reads its claims. */
  async verify(token: string): Promise<Principal> {
    if (!this.keys) return ANONYMOUS;
    const payload = await this.verifyJwt(token, ["sub", "exp"]);
    if (typeof payload.sub !== "string" || payload.sub.length === 0 || payload.sub.length > MAX_USER_LENGTH)
      throw new AuthError("claims", `token rejected: sub must be a string of 1-${MAX_USER_LENGTH} characters`);
    if ((payload as Record<string, unknown>).channel !== undefined)
      throw new AuthError("claims", "token rejected: it has a channel claim, so it is a subscription token (sub's token), not a connection token");
    const claims = payload as Record<string, unknown>;
    const perms = permissionsOf(claims);
    if (typeof perms === "string") throw new AuthError("claims", `token rejected: ${perms}`);
    const rpc = parseRpcClaim(claims.rpc);
    if (typeof rpc === "string") throw new AuthError("claims", `token rejected: ${rpc}`);
    const exp = lifeOf(payload.exp, claims.expire_at);
    if (typeof exp === "string") throw new AuthError("claims", `token rejected: ${exp}`);
    // `exp` was checked above; an `expire_at` that passed ends the connection's life the same way.
    if (exp !== undefined && exp !== payload.exp && exp + this.config.jwtClockToleranceSec < Date.now() / 1000)
      throw new AuthError("expired", "token's expire_at has passed");
    return Object.freeze({
      user: payload.sub,
      perms: rpc.length ? Object.freeze({ ...perms, rpc }) : perms,
      ...(exp !== undefined ? { exp } : {}),
      ...(claims.meta !== undefined && claims.meta !== null ? { meta: claims.meta } : {}),
      ...(claims.info !== undefined && claims.info !== null ? { info: claims.info } : {}),
    });
  }

  /**
   * A subscription token (`sub`'s `token`, SSE's `?sub_token=`): a JWT verified with the connection keys and
   * rules, naming one channel (`channel`) and an expiry (`exp`); `sub`, when present, the user it is for;
   * `info` any JSON. With authentication off there are no keys to verify it with: refused.
   */
  async verifySubscription(token: string): Promise<SubscriptionClaims> {
    if (!this.keys) throw new AuthError("invalid", "subscription tokens need authentication on (JWT_SECRET, JWT_PUBLIC_KEY_FILE or JWT_JWKS_FILE)");
    const payload = (await this.verifyJwt(token, ["channel", "exp"])) as JWTPayload & { channel?: unknown; info?: unknown };
    if (typeof payload.channel !== "string" || payload.channel.length === 0)
      throw new AuthError("claims", "subscription token rejected: channel must be a non-empty string");
    if (payload.sub !== undefined && (typeof payload.sub !== "string" || payload.sub.length === 0 || payload.sub.length > MAX_USER_LENGTH))
      throw new AuthError("claims", `subscription token rejected: sub must be a string of 1-${MAX_USER_LENGTH} characters`);
    // `expire_at` (Centrifugo's) ends the subscription instead of `exp`; 0 (Centrifugo's "never") is read as absent.
    const life = lifeOf(payload.exp, (payload as Record<string, unknown>).expire_at);
    if (typeof life === "string") throw new AuthError("claims", `subscription token rejected: ${life}`);
    const exp = life ?? (payload.exp as number);
    return { channel: payload.channel, exp, ...(payload.sub !== undefined ? { user: payload.sub } : {}), info: payload.info };
  }

  /** Signature, algorithm, `iss`, `aud`, `exp`/`nbf` (with the clock tolerance) and the required claims. */
  private async verifyJwt(token: string, requiredClaims: string[]): Promise<JWTPayload> {
    const keys = this.keys;
    if (!keys) throw new AuthError("invalid", "no keys to verify tokens with");
    if (token.length > MAX_TOKEN_LENGTH) throw new AuthError("invalid", `token is longer than ${MAX_TOKEN_LENGTH} characters`);
    try {
      const { payload } = await jwtVerify(token, keys.key as Uint8Array, {
        algorithms: keys.algorithms,
        issuer: this.config.jwtIssuer || undefined,
        audience: this.config.jwtAudience || undefined,
        clockTolerance: this.config.jwtClockToleranceSec,
        requiredClaims,
      });
      return payload;
    } catch (e) {
      if (e instanceof joseErrors.JWTExpired) throw new AuthError("expired", "token has expired", { cause: e });
      if (e instanceof joseErrors.JWTClaimValidationFailed) throw new AuthError("claims", `token rejected: ${e.message}`, { cause: e });
      throw new AuthError("invalid", `token rejected: ${e instanceof joseErrors.JOSEError ? e.message : "malformed token"}`, { cause: e });
    }
  }

  /**
   * An HTTP request: an API key (X-Api-Key, or as the bearer) or a JWT bearer; ANONYMOUS when auth is off.
   * `urlToken`: the door also reads a JWT from `?token=` (SSE), which the refusal of none then names.
   */
  async authenticateHttp(c: HttpCredentials, urlToken = false): Promise<Principal> {
    if (!this.enabled) return ANONYMOUS;
    if (!c.bearer && !c.apiKey)
      throw new AuthError(
        "missing",
        urlToken
          ? "credentials are required: Authorization: Bearer <token>, ?token=<token>, or an API key in the X-Api-Key header (never in the URL)"
          : "credentials are required: Authorization: Bearer <token>, or an API key in the X-Api-Key header (this request's URL is not read for them)",
      );
    if (c.apiKey !== undefined && c.apiKey !== "") {
      const key = this.apiKeyOf(c.apiKey);
      if (key) return key;
      throw new AuthError("invalid", "unknown API key");
    }
    return (c.bearer ? this.apiKeyOf(c.bearer) : undefined) ?? this.authenticate(c.bearer);
  }

  /** Whether `candidate` is one of the configured API keys (compared in constant time). */
  isApiKey(candidate: string): boolean {
    return this.apiKeyOf(candidate) !== undefined;
  }

  /** The principal of the configured API key `candidate` is (every key compared, in constant time). */
  private apiKeyOf(candidate: string): Principal | undefined {
    const h = sha256(candidate);
    let found: Principal | undefined;
    for (const k of this.apiKeys) if (timingSafeEqual(h, k.hash)) found = k.principal;
    return found;
  }
}

const sha256 = (s: string): Buffer => createHash("sha256").update(s).digest();

/** The token of an `Authorization: Bearer <token>` header value, if it is one. */
export function bearerOf(authorization: string): string | undefined {
  const m = /^Bearer[ \t]+(\S+)\s*$/i.exec(authorization);
  return m?.[1];
}
