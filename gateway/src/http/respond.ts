import type { Refusal } from "../auth/access.js";
import { writeUws, writeUwsError, type ErrorReply } from "../protocol/http-reply.js";
import type { HttpResponse } from "../uws.js";

/** Response state shared by async handlers: uWS forbids touching a response after it was aborted. */
export type ResState = { aborted: boolean; done: boolean };

export function track(res: HttpResponse): ResState {
  const st: ResState = { aborted: false, done: false };
  res.onAborted(() => {
    st.aborted = true;
  });
  return st;
}

export function send(res: HttpResponse, st: ResState, status: number, body: string, contentType = "application/json", headers?: Record<string, string>): void {
  if (st.aborted || st.done) return;
  st.done = true;
  res.cork(() => writeUws(res, status, body, contentType, headers));
}

/** Answers an error: `{error, message, temporary}` with the code's status (protocol/http-reply.ts). */
export function sendError(res: HttpResponse, st: ResState, e: ErrorReply): void {
  if (st.aborted || st.done) return;
  st.done = true;
  res.cork(() => writeUwsError(res, e));
}

export const sendJson = (res: HttpResponse, st: ResState, status: number, value: unknown, headers?: Record<string, string>): void =>
  send(res, st, status, JSON.stringify(value), "application/json", headers);

/**
 * Reads a request body up to `limit` bytes. Resolves with the body, or with `undefined` when it was larger
 * (the caller answers 413) or the request was aborted.
 */
export function readBody(res: HttpResponse, st: ResState, limit: number): Promise<Buffer | "too_large" | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    res.onData((chunk, isLast) => {
      // Aborted, or answered already (a refusal before the body was needed): the rest is dropped, not copied.
      if (st.aborted || st.done) return resolve(undefined);
      // A body in one chunk (most are) is copied once; uWS reuses the chunk's memory after this call.
      if (isLast && chunks.length === 0 && !over) return resolve(chunk.byteLength > limit ? "too_large" : Buffer.from(new Uint8Array(chunk)));
      if (!over) {
        size += chunk.byteLength;
        if (size > limit) over = true;
        else chunks.push(Buffer.from(new Uint8Array(chunk)));
      }
      if (isLast) resolve(over ? "too_large" : Buffer.concat(chunks, size));
    });
  });
}

/** Answers a refusal of the authorization chain: `{error, message, temporary}` with its status. */
export const sendRefusal = (res: HttpResponse, st: ResState, r: Refusal): void => sendError(res, st, r);
