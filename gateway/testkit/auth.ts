// Tokens and raw sockets of the auth and limits tests and the conformance suite: signing real tokens with jose, and opening sockets with options the
// shared TestClient does not take (source address, Origin, TLS CA), answered with the HTTP status on refusal.
import { SignJWT, type JWTPayload } from "jose";
import WebSocket from "ws";
import { TestClient } from "./ws-client.js";

export const SECRET = "test-secret-that-is-long-enough-0123456789";
export const ISSUER = "https://issuer.test";
export const AUDIENCE = "fanout-test";

export type SignOptions = { key?: Parameters<SignJWT["sign"]>[0]; alg?: string; kid?: string; exp?: number | string; iss?: string; aud?: string; sub?: string };

/** Signs a token (HS256 with SECRET unless told otherwise) for `sub` with `claims`. */
export async function sign(
  claims: JWTPayload & { channels?: { sub?: string[]; pub?: string[]; auto?: string[] }; rpc?: string[] },
  o: SignOptions = {},
): Promise<string> {
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: o.alg ?? "HS256", ...(o.kid ? { kid: o.kid } : {}) })
    .setIssuedAt()
    .setExpirationTime(o.exp ?? "10m");
  if (o.sub !== "") jwt.setSubject(o.sub ?? "alice");
  if (o.iss !== "") jwt.setIssuer(o.iss ?? ISSUER);
  if (o.aud !== "") jwt.setAudience(o.aud ?? AUDIENCE);
  return jwt.sign(o.key ?? new TextEncoder().encode(SECRET));
}

export type ConnectOptions = { protocols?: string[]; headers?: Record<string, string>; localAddress?: string; ca?: string };

/** Connects, resolving with the client, or with the HTTP status the upgrade was refused with. */
export async function tryConnect(
  url: string,
  o: ConnectOptions = {},
): Promise<TestClient | { status: number; body: string; headers: Record<string, unknown> }> {
  const ws = new WebSocket(url, o.protocols, { headers: o.headers, localAddress: o.localAddress, ca: o.ca });
  return new Promise((resolve, reject) => {
    ws.once("open", () => resolve(TestClient.wrap(ws)));
    ws.once("error", reject);
    ws.once("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
  });
}

/** Connects or throws with the status. */
export async function connect(url: string, o: ConnectOptions = {}): Promise<TestClient> {
  const r = await tryConnect(url, o);
  if (!(r instanceof TestClient)) throw new Error(`HTTP ${r.status}: ${r.body}`);
  return r;
}

/** The status of a refused upgrade (fails when it is accepted). */
export async function refusal(url: string, o: ConnectOptions = {}): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  const r = await tryConnect(url, o);
  if (r instanceof TestClient) {
    r.close();
    throw new Error("upgrade was accepted");
  }
  return r;
}
