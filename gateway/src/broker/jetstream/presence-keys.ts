/**
 * Presence keys. A member of channel `orders.eu` with client id `k3Jx…` is the KV key `orders.eu.k3Jx…` of the
 * presence bucket (subject `$KV.<bucket>.orders.eu.k3Jx…`). KV keys allow only `[-/_=.a-zA-Z0-9]` while a
 * channel token may hold any character but whitespace, `*`, `>` and `.`: every other character is written
 * as `=` and two hex digits per UTF-8 byte (`=` itself too), so the encoding is reversible and a channel's
 * tokens stay tokens. A channel's members are exactly the keys `<encoded channel>.*`: every key has one
 * token more than its channel.
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

/** Decodes a token written by `encodeToken`. */
export function decodeToken(token: string): string {
  if (!token.includes("=")) return token;
  const bytes: number[] = [];
  for (let i = 0; i < token.length; i++) {
    if (token[i] === "=") {
      bytes.push(parseInt(token.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(token.charCodeAt(i));
  }
  return Buffer.from(bytes).toString("utf8");
}

/** The channel part of its members' keys. */
export const encodeChannel = (channel: string): string => channel.split(".").map(encodeToken).join(".");

/** The key of one member. */
export const memberKey = (channel: string, client: string): string => `${encodeChannel(channel)}.${client}`;

/** The client id of a key (its last token). */
export const clientOfKey = (key: string): string => key.slice(key.lastIndexOf(".") + 1);
