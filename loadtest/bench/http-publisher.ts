// One HTTP publisher for the benches: `POST /v1/publish/{channel}` over kept-alive connections (node:http).
// Latency benches stamp a message just before it is handed to this client, so the client's own cost is part of
// what they measure: `fetch` (undici) in the same process as the measuring WebSocket client added about 8 ms
// to the p99 of HTTP publish → delivery at 100 messages a second (p99 18.5 ms against 9.8 ms with this, the
// same run, bench:regions' path with undelayed links).
import { Agent, request } from "node:http";

export type PublishAnswer = { status: number; text: string };

export type HttpPublisher = {
  /** Publishes `body` (JSON text) to `channel`; rejects only on a transport error or the timeout. */
  publish(channel: string, body: string): Promise<PublishAnswer>;
  close(): void;
};

export function httpPublisher(baseUrl: string, opts: { maxSockets?: number; timeoutMs?: number } = {}): HttpPublisher {
  const u = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: opts.maxSockets ?? 16 });
  const timeout = opts.timeoutMs ?? 10_000;
  return {
    publish: (channel, body) =>
      new Promise<PublishAnswer>((resolve, reject) => {
        const req = request(
          {
            host: u.hostname,
            port: u.port,
            method: "POST",
            path: `/v1/publish/${encodeURIComponent(channel)}`,
            agent,
            headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
            timeout,
          },
          (r) => {
            let text = "";
            r.on("data", (d: Buffer) => (text += d.toString()));
            r.on("end", () => resolve({ status: r.statusCode ?? 0, text }));
          },
        );
        req.on("timeout", () => req.destroy(new Error("timeout")));
        req.on("error", reject);
        req.end(body);
      }),
    close: () => agent.destroy(),
  };
}
