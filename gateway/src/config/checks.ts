import { existsSync } from "node:fs";
import type { Config } from "./settings.js";
import { ConfigError } from "../errors.js";

/** Authentication is on when any JWT key source is set. */
export const authEnabled = (c: Pick<Config, "jwtSecret" | "jwtPublicKeyFile" | "jwtJwksFile">): boolean =>
  !!(c.jwtSecret || c.jwtPublicKeyFile || c.jwtJwksFile);

const name = (env: string, flag: string) => `${env} (--${flag})`;

/** Cross-checks of the authentication, TLS and limit settings; throws ConfigError naming the settings. */
export function checkAuthConfig(c: Config): void {
  const keys = [
    c.jwtSecret && name("JWT_SECRET", "jwt-secret"),
    c.jwtPublicKeyFile && name("JWT_PUBLIC_KEY_FILE", "jwt-public-key-file"),
    c.jwtJwksFile && name("JWT_JWKS_FILE", "jwt-jwks-file"),
  ].filter((k): k is string => !!k);
  if (keys.length > 1) throw new ConfigError("JWT_SECRET", `invalid ${keys.join(" with ")}: give exactly one JWT key source`);
  const on = authEnabled(c);
  if (!on) {
    const orphan = (
      [
        ["API_KEYS", "api-keys", c.apiKeys.length > 0],
        ["API_KEYS_FILE", "api-keys-file", !!c.apiKeysFile],
        ["JWT_ALGORITHMS", "jwt-algorithms", c.jwtAlgorithms.length > 0],
        ["JWT_ISSUER", "jwt-issuer", !!c.jwtIssuer],
        ["JWT_AUDIENCE", "jwt-audience", !!c.jwtAudience],
      ] as const
    ).find((x) => x[2]);
    if (orphan)
      throw new ConfigError(
        orphan[0],
        `invalid ${name(orphan[0], orphan[1])}: has no effect without JWT_SECRET, JWT_PUBLIC_KEY_FILE or JWT_JWKS_FILE (authentication is off)`,
      );
  }
  if (on && c.jwtAlgorithms.length > 0) {
    const hmac = c.jwtAlgorithms.filter((a) => a.startsWith("HS"));
    if (c.jwtSecret && hmac.length !== c.jwtAlgorithms.length)
      throw new ConfigError("JWT_ALGORITHMS", `invalid ${name("JWT_ALGORITHMS", "jwt-algorithms")}: JWT_SECRET verifies HS256/HS384/HS512 only`);
    if (!c.jwtSecret && hmac.length > 0)
      throw new ConfigError("JWT_ALGORITHMS", `invalid ${name("JWT_ALGORITHMS", "jwt-algorithms")}: ${hmac.join(", ")} needs JWT_SECRET, not a public key`);
  }
  for (const [env, flag, file] of [
    ["JWT_PUBLIC_KEY_FILE", "jwt-public-key-file", c.jwtPublicKeyFile],
    ["JWT_JWKS_FILE", "jwt-jwks-file", c.jwtJwksFile],
    ["API_KEYS_FILE", "api-keys-file", c.apiKeysFile],
    ["TLS_CERT_FILE", "tls-cert-file", c.tlsCertFile],
    ["TLS_KEY_FILE", "tls-key-file", c.tlsKeyFile],
    ["NATS_STORE_KEY_FILE", "nats-store-key-file", c.natsStoreKeyFile],
    ["HOOK_SECRET_FILE", "hook-secret-file", c.hookSecretFile],
  ] as const) {
    if (file && !existsSync(file)) throw new ConfigError(env, `invalid ${name(env, flag)}: ${file} does not exist`);
  }
  if (!!c.tlsCertFile !== !!c.tlsKeyFile) {
    const [env, flag] = c.tlsCertFile ? (["TLS_KEY_FILE", "tls-key-file"] as const) : (["TLS_CERT_FILE", "tls-cert-file"] as const);
    throw new ConfigError(env, `invalid ${name(env, flag)}: TLS needs both TLS_CERT_FILE and TLS_KEY_FILE`);
  }
  if (c.tlsCertFile && c.tlsPort !== 0 && c.tlsPort === c.port)
    throw new ConfigError("TLS_PORT", `invalid ${name("TLS_PORT", "tls-port")}: must differ from PORT (${c.port})`);
  checkHooksIdentify(c, on);
  if (c.natsStoreKeyFile) {
    const moot =
      c.broker !== "jetstream"
        ? "BROKER=redis"
        : c.natsUrl.length > 0
          ? "NATS_URL (the servers' own jetstream cipher and key apply)"
          : c.streamStorage === "memory"
            ? "STREAM_STORAGE=memory"
            : "";
    if (moot) throw new ConfigError("NATS_STORE_KEY_FILE", `invalid ${name("NATS_STORE_KEY_FILE", "nats-store-key-file")}: has no effect with ${moot}`);
  }
  if (c.connectRatePerIp !== -1 && c.connectBurstPerIp < 1)
    throw new ConfigError("CONNECT_BURST_PER_IP", `invalid ${name("CONNECT_BURST_PER_IP", "connect-burst-per-ip")}: must be at least 1`);
}

/** The TLS listener is configured. */
export const tlsEnabled = (c: Pick<Config, "tlsCertFile" | "tlsKeyFile">): boolean => !!(c.tlsCertFile && c.tlsKeyFile);

/**
 * Hooks gate users, so something must say who the user is on every door: a token (authentication on), or,
 * with authentication off, the connect hook reading the request headers that identify it (a session cookie).
 * Without either every WebSocket and HTTP request would be the same anonymous user, and the hooks would
 * decide for all of them alike.
 */
function checkHooksIdentify(c: Config, authOn: boolean): void {
  if (authOn || (!c.connectHookUrl && !c.subscribeHookUrl)) return;
  if (!c.connectHookUrl)
    throw new ConfigError(
      "SUBSCRIBE_HOOK_URL",
      `invalid ${name("SUBSCRIBE_HOOK_URL", "subscribe-hook-url")}: with authentication off and no CONNECT_HOOK_URL nothing identifies users, so the subscribe hook would answer for everyone alike; set a JWT key (JWT_SECRET, JWT_PUBLIC_KEY_FILE, JWT_JWKS_FILE) or a CONNECT_HOOK_URL that identifies users from HOOK_HEADERS`,
    );
  if (c.hookHeaders.length === 0)
    throw new ConfigError(
      "HOOK_HEADERS",
      `invalid ${name("HOOK_HEADERS", "hook-headers")}: with authentication off the connect hook identifies users from the request headers, and none are passed to it; name the headers that carry the session (cookie, say)`,
    );
}

const NATS_FILES = [
  ["NATS_CREDS_FILE", "nats-creds-file", "natsCredsFile"],
  ["NATS_NKEY_SEED_FILE", "nats-nkey-seed-file", "natsNkeySeedFile"],
  ["NATS_PASSWORD_FILE", "nats-password-file", "natsPasswordFile"],
  ["NATS_TOKEN_FILE", "nats-token-file", "natsTokenFile"],
  ["NATS_TLS_CA_FILE", "nats-tls-ca-file", "natsTlsCaFile"],
  ["NATS_TLS_CERT_FILE", "nats-tls-cert-file", "natsTlsCertFile"],
  ["NATS_TLS_KEY_FILE", "nats-tls-key-file", "natsTlsKeyFile"],
] as const;

/**
 * Cross-checks of the NATS credential and TLS settings: one way to authenticate, user with password, cert
 * with key, files that exist, and none of it without a NATS_URL to use it on (the embedded server has none).
 * The files' contents are checked where they are read (broker/jetstream/nats-security.ts).
 */
export function checkNatsSecurity(c: Config): void {
  const set = NATS_FILES.filter((f) => c[f[2]]);
  const first = set[0] ?? (c.natsUser ? (["NATS_USER", "nats-user"] as const) : c.natsTlsFirst ? (["NATS_TLS_FIRST", "nats-tls-first"] as const) : undefined);
  if (first && (c.broker !== "jetstream" || c.natsUrl.length === 0))
    throw new ConfigError(
      first[0],
      `invalid ${name(first[0], first[1])}: has no effect without NATS_URL (the embedded nats-server and redis take no NATS credentials)`,
    );
  for (const [env, flag, key] of set) {
    if (!existsSync(c[key])) throw new ConfigError(env, `invalid ${name(env, flag)}: ${c[key]} does not exist`);
  }
  const ways = (
    [
      [c.natsCredsFile, "NATS_CREDS_FILE", "nats-creds-file"],
      [c.natsNkeySeedFile, "NATS_NKEY_SEED_FILE", "nats-nkey-seed-file"],
      [c.natsUser || c.natsPasswordFile, "NATS_USER", "nats-user"],
      [c.natsTokenFile, "NATS_TOKEN_FILE", "nats-token-file"],
    ] as const
  ).filter(([given]) => !!given);
  const [oneWay, another] = ways;
  if (oneWay && another) {
    throw new ConfigError(oneWay[1], `invalid ${ways.map(([, env, flag]) => name(env, flag)).join(" with ")}: give one way to authenticate to NATS`);
  }
  if (!!c.natsUser !== !!c.natsPasswordFile) {
    const [env, flag] = c.natsUser ? ["NATS_PASSWORD_FILE", "nats-password-file"] : ["NATS_USER", "nats-user"];
    throw new ConfigError(env, `invalid ${name(env, flag)}: NATS user authentication needs both NATS_USER and NATS_PASSWORD_FILE`);
  }
  if (!!c.natsTlsCertFile !== !!c.natsTlsKeyFile) {
    const [env, flag] = c.natsTlsCertFile ? ["NATS_TLS_KEY_FILE", "nats-tls-key-file"] : ["NATS_TLS_CERT_FILE", "nats-tls-cert-file"];
    throw new ConfigError(env, `invalid ${name(env, flag)}: a NATS client certificate needs both NATS_TLS_CERT_FILE and NATS_TLS_KEY_FILE`);
  }
}
