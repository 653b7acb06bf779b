import type { Config } from "./config.js";

/** Their environment variables, removed from the primary's environment before it forks (workers inherit it). */
export const SECRET_ENV = ["JWT_SECRET", "API_KEYS"] as const;

/**
 * Settings whose values are secrets: never in a worker's environment (readable in /proc/<pid>/environ). And
 * the embedded nats-server's token, made at each start (instance/embedded-nats.ts): no setting, no command line.
 */
export type Secrets = Pick<Config, "jwtSecret" | "apiKeys"> & { natsToken?: string };

/** The config a worker is forked with: the secrets blanked (they come over IPC). */
export function withoutSecrets(c: Config): Config {
  return Object.freeze({ ...c, jwtSecret: "", apiKeys: [] });
}

export function secretsOf(c: Config, natsToken?: string): Secrets {
  return { jwtSecret: c.jwtSecret, apiKeys: c.apiKeys, ...(natsToken ? { natsToken } : {}) };
}

export function withSecrets(c: Config, s: Secrets): Config {
  return Object.freeze({ ...c, jwtSecret: s.jwtSecret, apiKeys: s.apiKeys });
}
