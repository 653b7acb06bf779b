import { createHmac, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";

/** The header a signed request carries: `t=<unix seconds>,v1=<hex>` (one `v1` per secret while one is rotated). */
export const SIGNATURE_HEADER = "Fanout-Signature";

/**
 * The secrets in a secret file's text (`setting` names it in errors): one per line, the current one first and,
 * while it is rotated, the previous one second (every request is signed with each). Blank lines are ignored;
 * none, or more than two, is refused.
 */
export function secretsOf(text: string, setting: string, file: string): string[] {
  const secrets = text.split(/\r?\n/).filter((l) => l.trim() !== "");
  if (secrets.length === 0) throw new Error(`${setting} ${file} is empty`);
  if (secrets.length > 2) throw new Error(`${setting} ${file} holds ${secrets.length} secrets: at most two (the current one, then the previous one)`);
  return secrets;
}

/** The secrets of the file `setting` names (read once, at start), or none when it names no file. */
export const readSecrets = (setting: string, file: string): string[] => (file ? secretsOf(readFileSync(file, "utf8"), setting, file) : []);

/** The hex HMAC-SHA256 of `"<t>.<raw body>"` with `secret`. */
export function signatureOf(secret: string | Buffer, t: number, body: string): string {
  return createHmac("sha256", secret).update(`${t}.${body}`).digest("hex");
}

/** The header's value for a body sent at `t` (unix seconds), signed with each secret. */
export function signatureHeader(secrets: readonly (string | Buffer)[], t: number, body: string): string {
  return [`t=${t}`, ...secrets.map((s) => `v1=${signatureOf(s, t, body)}`)].join(",");
}

/**
 * What a backend does with a signed request (PROTOCOL.md shows the same steps): read `t` and every `v1`,
 * refuse a `t` further than `toleranceS` from now (a replayed request), and accept when one `v1` is the
 * HMAC of `"<t>.<raw body>"` with the secret, compared in constant time.
 */
export function verifySignature(header: string, secret: string | Buffer, body: string, toleranceS = 300, nowS = Math.floor(Date.now() / 1000)): boolean {
  let t: number | undefined;
  const v1: string[] = [];
  for (const part of header.split(",")) {
    const [k, v] = part.trim().split("=", 2);
    if (k === "t" && v && /^\d+$/.test(v)) t = Number(v);
    else if (k === "v1" && v) v1.push(v);
  }
  if (t === undefined || Math.abs(nowS - t) > toleranceS) return false;
  const want = Buffer.from(signatureOf(secret, t, body), "hex");
  return v1.some((h) => /^[0-9a-f]{64}$/.test(h) && timingSafeEqual(Buffer.from(h, "hex"), want));
}
