// Plain HTTP requests from a chosen loopback source address (node:http with localAddress), so that the
// soak's clients come from many client IPs and the per-IP tables of the gateway fill and empty as in service.
// fetch cannot pick its source address; this can. One connection per request (agent: false).
import http, { type ClientRequest, type IncomingMessage } from "node:http";

export type HttpAnswer = { status: number; body: string };

export function request(
  url: string,
  opts: { method?: string; body?: string; headers?: Record<string, string>; localAddress?: string; timeoutMs?: number } = {},
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: opts.method ?? "GET", headers: opts.headers, localAddress: opts.localAddress, agent: false }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      res.on("error", reject);
    });
    req.setTimeout(opts.timeoutMs ?? 10_000, () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end(opts.body);
  });
}

/**
 * Opens a streaming GET (Server-Sent Events) and hands each complete event block to `onEvent`; resolves with
 * the response once headers arrived. `close()` ends it from this side.
 */
export function openStream(
  url: string,
  opts: { headers?: Record<string, string>; localAddress?: string; timeoutMs?: number },
  onEvent: (block: string) => void,
): Promise<{ status: number; res: IncomingMessage; close(): void; ended: Promise<void> }> {
  return new Promise((resolve, reject) => {
    let req: ClientRequest | undefined = undefined;
    const timer = setTimeout(() => req?.destroy(new Error("no answer")), opts.timeoutMs ?? 10_000);
    req = http.get(url, { headers: opts.headers, localAddress: opts.localAddress, agent: false }, (res) => {
      clearTimeout(timer);
      let buf = "";
      res.setEncoding("utf8");
      const ended = new Promise<void>((r) => {
        res.on("close", () => r());
        res.on("error", () => r());
      });
      res.on("data", (d: string) => {
        buf += d;
        let i: number;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          onEvent(buf.slice(0, i));
          buf = buf.slice(i + 2);
        }
      });
      resolve({ status: res.statusCode ?? 0, res, close: () => req?.destroy(), ended });
    });
    req.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}
