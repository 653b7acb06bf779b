import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError } from "../../errors.js";

/** JetStream store ciphers of nats-server (`jetstream { cipher }`). */
export type StoreCipher = "chachapoly" | "aes";

export const KEY_SETTING = "NATS_STORE_KEY_FILE (--nats-store-key-file)";

/** The environment variable through which the embedded nats-server gets the key (never its command line). */
export const STORE_KEY_ENV = "FGW_NATS_STORE_KEY";

/**
 * The embedded server's config file: the cipher, and the key as a reference to STORE_KEY_ENV, which
 * nats-server resolves from its environment (conf/parse.go, lookupVariable). The file holds no secret.
 */
export const encryptionConfig = (cipher: StoreCipher): string => `jetstream {\n  cipher: ${cipher}\n  key: $${STORE_KEY_ENV}\n}\n`;

/**
 * Reads the key file and returns the value of STORE_KEY_ENV: the key as a double-quoted config string, so
 * that nats-server reads it as a string whatever it looks like (digits, `#`, spaces). Surrounding white space
 * (the file's final newline) is not part of the key.
 */
export function storeKeyEnvValue(file: string): string {
  let key: string;
  try {
    key = readFileSync(file, "utf8").trim();
  } catch (e) {
    throw new ConfigError("NATS_STORE_KEY_FILE", `invalid ${KEY_SETTING}: cannot read ${file}: ${(e as Error).message}`);
  }
  if (key.length < 16) throw new ConfigError("NATS_STORE_KEY_FILE", `invalid ${KEY_SETTING}: the key in ${file} must be at least 16 characters`);
  if (/[\u0000-\u001f\u007f]/.test(key)) throw new ConfigError("NATS_STORE_KEY_FILE", `invalid ${KEY_SETTING}: the key in ${file} has control characters`);
  return `"${key.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/** Streams whose directory is in the store but which the server did not load, and whether they are encrypted. */
export function unloadedStreams(storeDir: string, loaded: readonly string[]): { name: string; encrypted: boolean }[] {
  const dir = join(storeDir, "jetstream", "$G", "streams");
  if (!existsSync(dir)) return [];
  const have = new Set(loaded);
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && !have.has(d.name))
    .map((d) => ({ name: d.name, encrypted: existsSync(join(dir, d.name, "meta.key")) }));
}

/**
 * The error for streams the embedded server could not read. A stream it cannot decrypt is not loaded, and
 * creating it again would replace its files: the gateway stops before anything touches them.
 */
export function unreadableStoreError(storeDir: string, streams: { name: string; encrypted: boolean }[], keyed: boolean): ConfigError | undefined {
  const enc = streams.filter((s) => s.encrypted).map((s) => s.name);
  if (enc.length === 0) return undefined;
  const names = enc.join(", ");
  return keyed
    ? new ConfigError(
        "NATS_STORE_KEY_FILE",
        `invalid ${KEY_SETTING}: the embedded nats-server cannot decrypt stream(s) ${names} in ${storeDir} with this key (or NATS_STORE_CIPHER); the gateway stopped before touching them`,
      )
    : new ConfigError(
        "NATS_STORE_KEY_FILE",
        `stream(s) ${names} in ${storeDir} are encrypted: set ${KEY_SETTING} to the file holding their key; the gateway stopped before touching them`,
      );
}
