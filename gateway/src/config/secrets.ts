import type { Config } from "./config.js";

/** Their environment variables, removed from the primary's environment before it forks (workers inherit it). */
export const SECRET_ENV = ["JWT_SECRET", "API_KEYS"] as const;

/** Settings whose values are secrets: never in a worker's environment (readable in /proc/<pid>/environ). */
export type Secrets = Pick<Config, "jwtSecret" | "apiKeys">;

/** The config a worker is forked with: the secrets blanked (they come over IPC). */
export function withoutSecrets(c: Config): Config {
  return Object.freeze({ ...c, jwtSecret: "", apiKeys: [] });
}

export function secretsOf(c: Config): Secrets {
  return { jwtSecret: c.jwtSecret, apiKeys: c.apiKeys };
}

export function withSecrets(c: Config, s: Secrets): Config {
  return Object.freeze({ ...c, ...s });
}
