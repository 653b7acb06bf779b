import type { Connection } from "./connection.js";
import { GatewayError, wireError } from "./errors.js";
import type { WebSocketLike } from "./types.js";

/**
 * `rpc` calls waiting for their answer. A call is never queued nor re-sent (the backend may have run it):
 * while disconnected it fails at once with `not_connected`, and one in flight when the socket closes fails
 * with `connection_lost`, both temporary; when the client closes, with `closed`.
 */
export class RpcCalls {
  private readonly waiting = new Set<(e: GatewayError) => void>();

  /** Sends `{op:"rpc", method, data}` on `ws` and settles with the answer's `data`, or its error. */
  call<T>(conn: Connection, ws: WebSocketLike, method: string, data: unknown): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const done = () => {
        this.waiting.delete(fail);
        unwatch();
      };
      const fail = (e: GatewayError) => {
        done();
        reject(e);
      };
      const unwatch = conn.onceClosed(() => fail(new GatewayError("connection_lost", `connection lost before ${method} was answered`, { temporary: true })));
      this.waiting.add(fail);
      conn.request(ws, { op: "rpc", method, data: data ?? null }, (r) => {
        done();
        if (r.op === "ok") resolve(r.data as T);
        else reject(wireError(r));
      });
    });
  }

  /** The client stopped: every call fails with `error`. */
  rejectAll(error: GatewayError): void {
    for (const fail of [...this.waiting]) fail(error);
  }
}
