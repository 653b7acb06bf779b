import type { Readable, Writable } from "node:stream";

/**
 * What uWS.js writes to stderr (from C++, once per call) when a response is written outside `res.cork`. The
 * WebSocket upgrade after an asynchronous token check does so on purpose (ws/guard.ts explains why), so this
 * line says nothing to an operator and would come once per authenticated connection.
 */
export const UWS_CORK_WARNING = "Warning: uWS.HttpResponse writes must be made from within a corked callback.";

/**
 * Copies a worker's stderr to `to` line by line, without uWS.js's cork warning. A last line without a newline
 * is copied when the stream ends.
 */
export function forwardWorkerStderr(from: Readable, to: Writable): void {
  let pending = "";
  const emit = (line: string): void => {
    if (!line.startsWith(UWS_CORK_WARNING)) to.write(line);
  };
  from.setEncoding("utf8");
  from.on("data", (chunk: string) => {
    pending += chunk;
    let nl: number;
    while ((nl = pending.indexOf("\n")) >= 0) {
      emit(pending.slice(0, nl + 1));
      pending = pending.slice(nl + 1);
    }
  });
  from.on("end", () => {
    if (pending) emit(pending);
    pending = "";
  });
}
