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
    ["TLS_CERT_FILE", "tls-cert-file", c.tlsCertFile],
    ["TLS_KEY_FILE", "tls-key-file", c.tlsKeyFile],
    ["NATS_STORE_KEY_FILE", "nats-store-key-file", c.natsStoreKeyFile],
  ] as const) {
    if (file && !existsSync(file)) throw new ConfigError(env, `invalid ${name(env, flag)}: ${file} does not exist`);
  }
  if (!!c.tlsCertFile !== !!c.tlsKeyFile) {
    const missing = c.tlsCertFile ? ["TLS_KEY_FILE", "tls-key-file"] : ["TLS_CERT_FILE", "tls-cert-file"];
    throw new ConfigError(missing[0]!, `invalid ${name(missing[0]!, missing[1]!)}: TLS needs both TLS_CERT_FILE and TLS_KEY_FILE`);
  }
  if (c.tlsCertFile && c.tlsPort !== 0 && c.tlsPort === c.port)
    throw new ConfigError("TLS_PORT", `invalid ${name("TLS_PORT", "tls-port")}: must differ from PORT (${c.port})`);
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
