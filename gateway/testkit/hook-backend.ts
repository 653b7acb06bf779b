// The application backend of the hooks tests: a real HTTP server that records every hook call and answers
// as the test says (status, JSON body, extra headers such as a redirect's Location, a delay).
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";

/** One request: its path and parsed body, and as it came (the raw body and headers, to verify a signature). */
export type HookCall = { path: string; body: Record<string, unknown>; raw: string; headers: IncomingHttpHeaders };
export type HookAnswer = {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
  delayMs?: number;
  /** Answers only once this settles (a test that needs the gateway waiting on the hook). */
  hold?: Promise<void>;
  /** Answers 200 with `{"data":"xxx…` of this many bytes, written as fast as the socket takes them: an endless answer, bounded. */
  endless?: number;
};

/** How a streamed answer ended: the bytes written when its connection closed, and whether that was all of them. */
export type StreamEnd = { written: number; finished: boolean };

/**
 * Writes a JSON-looking body of `bytes` bytes to `res` as fast as the socket takes them, and calls `ended` when
 * the connection closes. With `declare` the Content-Length is sent and the body never is: a reader that trusts
 * the header must refuse on it alone.
 */
export function streamAnswer(res: ServerResponse, bytes: number, declare: boolean, ended: (e: StreamEnd) => void): void {
  res.writeHead(200, { "content-type": "application/json", ...(declare ? { "content-length": String(bytes) } : {}) });
  const chunk = Buffer.alloc(64 * 1024, "x");
  let written = 0;
  res.once("close", () => ended({ written, finished: written >= bytes }));
  if (declare) return void res.flushHeaders();
  const pump = () => {
    while (written < bytes && !res.destroyed) {
      const part = written === 0 ? Buffer.concat([Buffer.from('{"data":"'), chunk]) : chunk;
      written += part.length;
      if (!res.write(part)) return void res.once("drain", pump);
    }
    if (written >= bytes) res.end();
  };
  pump();
}

export class HookBackend {
  readonly calls: HookCall[] = [];
  /** How each `endless` answer ended, in order. */
  readonly streamEnds: StreamEnd[] = [];
  /** Answers each call; tests replace it. Allows everything by default. */
  answer: (c: HookCall) => HookAnswer = () => ({ body: { allow: true } });
  private server?: Server;
  port = 0;

  static async start(): Promise<HookBackend> {
    const b = new HookBackend();
    b.server = createServer((req, res) => b.handle(req, res));
    await new Promise<void>((r) => b.server!.listen(0, "127.0.0.1", r));
    b.port = (b.server.address() as { port: number }).port;
    return b;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  callsTo(path: string, where: (body: Record<string, unknown>) => boolean = () => true): HookCall[] {
    return this.calls.filter((c) => c.path === path && where(c.body));
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    let raw = "";
    req.on("data", (d: Buffer) => (raw += d.toString()));
    req.on("end", () => {
      const call = { path: req.url ?? "", body: (raw ? JSON.parse(raw) : {}) as Record<string, unknown>, raw, headers: req.headers };
      this.calls.push(call);
      const a = this.answer(call);
      if (a.endless !== undefined) return streamAnswer(res, a.endless, false, (e) => this.streamEnds.push(e));
      const reply = () => {
        if (res.destroyed) return;
        res.writeHead(a.status ?? 200, { "content-type": "application/json", ...a.headers }).end(JSON.stringify(a.body ?? {}));
      };
      if (a.hold) void a.hold.then(reply);
      else if (a.delayMs) setTimeout(reply, a.delayMs).unref();
      else reply();
    });
  }
}
