import { readFileSync } from "node:fs";
import type { AuthSection } from "../config/sections/index.js";
import { ConfigError } from "../errors.js";
import { SCOPES, type Scope } from "./principal.js";

/** A configured API key and what it may do. */
export type ApiKey = { key: string; scopes: readonly Scope[] };

const SETTING = "invalid API_KEYS_FILE (--api-keys-file)";

/**
 * The API keys: each of API_KEYS is an admin key (every scope; it was all there was before scopes), and
 * API_KEYS_FILE holds one key per line with its scopes, `<key> <scope>[,<scope>…]` (`#` starts a comment).
 * Throws ConfigError naming the setting and the line when the file is unreadable or a line is wrong.
 */
export function loadApiKeys(c: Pick<AuthSection, "apiKeys" | "apiKeysFile">): ApiKey[] {
  const keys: ApiKey[] = c.apiKeys.map((key) => ({ key, scopes: ["admin"] }));
  if (!c.apiKeysFile) return keys;
  let text: string;
  try {
    text = readFileSync(c.apiKeysFile, "utf8");
  } catch (e) {
    throw new ConfigError("API_KEYS_FILE", `${SETTING}: cannot read ${c.apiKeysFile}: ${(e as Error).message}`);
  }
  const seen = new Set(c.apiKeys);
  text.split("\n").forEach((raw, i) => {
    const line = raw.replace(/#.*$/, "").trim();
    if (line === "") return;
    const [key = "", scopes = "", extra] = line.split(/\s+/);
    const where = `${c.apiKeysFile} line ${i + 1}`;
    if (extra !== undefined || scopes === "") throw new ConfigError("API_KEYS_FILE", `${SETTING}: ${where}: write "<key> <scope>[,<scope>…]"`);
    if (key.length < 16) throw new ConfigError("API_KEYS_FILE", `${SETTING}: ${where}: a key must be at least 16 characters`);
    const list = scopes.split(",");
    const bad = list.find((s) => !(SCOPES as readonly string[]).includes(s));
    if (bad !== undefined) throw new ConfigError("API_KEYS_FILE", `${SETTING}: ${where}: unknown scope "${bad}" (use ${SCOPES.join(", ")})`);
    if (seen.has(key)) throw new ConfigError("API_KEYS_FILE", `${SETTING}: ${where}: the key is given twice`);
    seen.add(key);
    keys.push({ key, scopes: [...new Set(list as Scope[])] });
  });
  return keys;
}
