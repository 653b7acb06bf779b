/**
 * Tokens of KV keys (and so of subjects): KV keys allow only `[-/_=.a-zA-Z0-9]` while a channel token may
 * hold any character but whitespace, `*`, `>` and `.`: every other character is written as `=` and two hex
 * digits per UTF-8 byte (`=` itself too), so the encoding is reversible and a channel's tokens stay tokens.
 * Presence keys (broker/jetstream/presence-keys.ts) and the cluster's shared keys (events/shared-keys.ts)
 * are written this way.
 *
 * That readable form takes up to 9 characters per character of the name (a 3-byte UTF-8 character is
 * `=E7=95=8C`). Where a key would grow too long (events/shared-keys.ts), a token may be written compactly
 * instead: `==` and the base64url of its UTF-8 bytes (4 characters per 3 bytes). The readable form never
 * starts a token with `==` (`=` itself is `=3D`), so `decodeToken` reads both.
 */
const PLAIN = /^[A-Za-z0-9_-]$/;

/** Encodes one channel token for a KV key. */
export function encodeToken(token: string): string {
  let out = "";
  for (const ch of token) {
    if (PLAIN.test(ch)) {
      out += ch;
      continue;
    }
    for (const b of Buffer.from(ch, "utf8")) out += `=${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** Encodes one token compactly (`==` and base64url) unless it is plain already. */
export function compactToken(token: string): string {
  return /^[A-Za-z0-9_-]*$/.test(token) ? token : `==${Buffer.from(token, "utf8").toString("base64url")}`;
}

/** Decodes a token written by `encodeToken` or `compactToken`. */
export function decodeToken(token: string): string {
  if (!token.includes("=")) return token;
  if (token.startsWith("==")) return Buffer.from(token.slice(2), "base64url").toString("utf8");
  const bytes: number[] = [];
  for (let i = 0; i < token.length; i++) {
    if (token[i] === "=") {
      bytes.push(parseInt(token.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(token.charCodeAt(i));
  }
  return Buffer.from(bytes).toString("utf8");
}
