// A curl-like Server-Sent Events reader over node:http: parses the stream as the EventSource spec does
// (fields, comments, blank-line dispatch) and keeps every event. `pause()` stops reading (a slow reader).
import http from "node:http";
import { waitFor } from "./wait.js";

export type SseEvent = { event: string; id?: string; data: string; retry?: number };

export class SseReader {
  readonly events: SseEvent[] = [];
  readonly comments: string[] = [];
  status = 0;
  headers: http.IncomingHttpHeaders = {};
  /** The body of a refusal (a status other than 200). */
  body = "";
  ended = false;
  /** The response ended normally (the server finished it), not by a cut connection. */
  complete = false;
  private res?: http.IncomingMessage;
  private req?: http.ClientRequest;
  private buf = "";
  private cur: { event?: string; id?: string; data: string[] } = { data: [] };
  /** The id of the last event with one (what an EventSource sends as Last-Event-ID). */
  lastEventId = "";

  /** Opens `url` and resolves once the response headers are in. */
  static async open(url: string, headers: Record<string, string> = {}): Promise<SseReader> {
    const r = new SseReader();
    await new Promise<void>((resolve, reject) => {
      r.req = http.get(url, { headers: { accept: "text/event-stream", ...headers }, agent: false }, (res) => {
        r.res = res;
        r.status = res.statusCode ?? 0;
        r.headers = res.headers;
        res.setEncoding("utf8");
        res.on("data", (d: string) => (r.status === 200 ? r.feed(d) : (r.body += d)));
        res.on("end", () => {
          r.complete = true;
          r.ended = true;
        });
        res.on("close", () => (r.ended = true));
        res.on("error", () => (r.ended = true));
        resolve();
      });
      r.req.on("error", (e) => (r.res ? (r.ended = true) : reject(e)));
    });
    if (r.status !== 200) await waitFor(() => r.ended || undefined, { what: "error body" });
    return r;
  }

  /** The client side's port (to find the worker that serves the stream). */
  get localPort(): number {
    return this.req?.socket?.localPort ?? 0;
  }

  get json(): Record<string, unknown> {
    return JSON.parse(this.body) as Record<string, unknown>;
  }

  /** Message events' data, parsed (the gateway's `msg` frames). */
  get messages(): { seq: number; channel: string; data: unknown }[] {
    return this.events.filter((e) => e.event === "message").map((e) => JSON.parse(e.data) as { seq: number; channel: string; data: unknown });
  }

  get seqs(): number[] {
    return this.messages.map((m) => m.seq);
  }

  pause(): void {
    this.res?.pause();
  }

  resume(): void {
    this.res?.resume();
  }

  close(): void {
    this.req?.destroy();
    this.ended = true;
  }

  waitForSeqs(n: number, timeoutMs = 20_000): Promise<number[]> {
    return waitFor(() => (this.seqs.length >= n ? this.seqs : undefined), { timeoutMs, what: `${n} SSE messages (have ${this.seqs.length})` });
  }

  private feed(chunk: string): void {
    this.buf += chunk;
    let i: number;
    while ((i = this.buf.search(/\r\n|\r|\n/)) >= 0) {
      const line = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + (this.buf.startsWith("\r\n", i) ? 2 : 1));
      this.line(line);
    }
  }

  private line(line: string): void {
    if (line === "") {
      if (this.cur.data.length > 0) {
        const e: SseEvent = { event: this.cur.event ?? "message", data: this.cur.data.join("\n") };
        if (this.cur.id !== undefined) e.id = this.cur.id;
        this.events.push(e);
      }
      this.cur = { data: [] };
      return;
    }
    if (line.startsWith(":")) return void this.comments.push(line.slice(1).trim());
    const c = line.indexOf(":");
    const field = c < 0 ? line : line.slice(0, c);
    let value = c < 0 ? "" : line.slice(c + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.cur.data.push(value);
    else if (field === "event") this.cur.event = value;
    else if (field === "id") {
      this.cur.id = value;
      this.lastEventId = value;
    } else if (field === "retry") this.events.push({ event: "retry", data: "", retry: Number(value) });
  }
}
