/**
 * Gathers the work of one event-loop turn. Callers that `wait()` during the same turn resume together, in
 * the order they called, right after the turn's I/O callbacks (setImmediate).
 *
 * Publishing uses it: uWS calls JavaScript once per HTTP request or WebSocket frame, and nats.js flushes its
 * outbound buffer at the end of each such call (once per microtask checkpoint), so without it every publish
 * cost a write() of its own, and nats-server a read() of its own. Gathered, the publishes of a turn go out in
 * one write. The cost is at most one turn of latency.
 */
export class LoopTurn {
  private next?: Promise<void>;

  wait(): Promise<void> {
    this.next ??= new Promise((resolve) =>
      setImmediate(() => {
        this.next = undefined;
        resolve();
      }),
    );
    return this.next;
  }
}
