// A backend's webhook endpoint for the events tests: a real HTTP server that keeps every request's raw body
// and signature header, answers as the test says, and can go down and come back on the same port.
import { createServer, type Server } from "node:http";

/** One request as received: `status` 0 when the receiver closed the connection without answering. */
export type WebhookRequest = { body: string; signature: string; status: number; sender: string; at: number };

export class WebhookReceiver {
  readonly requests: WebhookRequest[] = [];
  /** The status each request is answered with; tests change it. */
  status = 200;
  /** When set, each request is read and its connection closed without an answer (a backend that crashes mid-request). */
  hangUp = false;
  /** When set, each request is read, recorded unanswered (`status` 0) and held open until `release()`. */
  holding = false;
  port = 0;
  private readonly held: (() => void)[] = [];
  private server?: Server;

  static async start(): Promise<WebhookReceiver> {
    const r = new WebhookReceiver();
    await r.up();
    return r;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/events`;
  }

  /** Listens (again, on the same port once it had one). */
  async up(): Promise<void> {
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (d: Buffer) => (body += d.toString()));
      req.on("end", () => {
        const status = this.hangUp || this.holding ? 0 : this.status;
        const header = (name: string) => String(req.headers[name] ?? "");
        this.requests.push({ body, signature: header("fanout-signature"), status, sender: header("fanout-sender"), at: Date.now() });
        if (this.holding) this.held.push(() => req.socket.destroy());
        else if (status === 0) req.socket.destroy();
        else res.writeHead(status).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(this.port, "127.0.0.1", resolve));
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  /** Stops holding: every held request's connection is closed without an answer. */
  release(): void {
    this.holding = false;
    for (const end of this.held.splice(0)) end();
  }

  /** Stops listening: connections are refused until up(). */
  async down(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    s?.closeAllConnections();
    await new Promise((r) => s?.close(r));
  }
}
