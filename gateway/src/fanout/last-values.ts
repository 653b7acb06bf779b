import type { ReplayApi } from "../broker/broker.js";
import { GatewayError } from "../errors.js";
import { ErrorCode } from "../protocol/codes.js";
import type { FanoutSocket } from "./socket.js";

/** A snapshot not sent within this long (the client reads too slowly) ends with `slow_consumer` (CATCHUP_DEADLINE's default). */
export const LAST_VALUES_DEADLINE_MS = 60_000;

/** What a last-value read did: `sent` frames, or it stopped because the subscription or socket ended. */
export type LastValuesResult = { sent: number; stopped: boolean; dropped?: boolean };

/**
 * Sends the newest stored message of every channel matching `pattern` as of `upTo` (`from:"last_per_subject"`),
 * page by page in stream order, waiting for the socket to drain when it holds more than `limitBytes`. The
 * caller then catches up from `upTo` + 1 and joins live (the catch-up hand-off), so that nothing between the
 * snapshot and live is lost or sent twice. `ended()` is asked between pages (an unsub, a closed socket).
 * A client that drains too slowly to take the whole snapshot within `deadlineMs` gets a temporary
 * `slow_consumer` GatewayError (thrown): it subscribes again, nothing is held for it meanwhile.
 */
export async function sendLastValues(
  sock: FanoutSocket,
  replay: Required<Pick<ReplayApi, "lastPerSubject">>,
  pattern: string,
  upTo: number,
  limitBytes: number,
  ended: () => boolean,
  deadlineMs = LAST_VALUES_DEADLINE_MS,
): Promise<LastValuesResult> {
  const deadline = Date.now() + deadlineMs;
  let after = 0;
  let sent = 0;
  for (;;) {
    const page = await replay.lastPerSubject(pattern, upTo, after);
    if (ended() || sock.closed) return { sent, stopped: true };
    const frames = sock.codec.msgs(pattern, page.messages);
    let dropped = false;
    sock.cork(() => {
      for (const f of frames) {
        if (sock.send(f) === 2) return void (dropped = true);
        sent++;
      }
    });
    // Over the socket's hard cap: the rest would be lost; the caller ends the subscription.
    if (dropped) return { sent, stopped: true, dropped: true };
    const next = page.cursor ?? page.messages.at(-1)?.seq;
    if (!page.more || next === undefined || next <= after) return { sent, stopped: false };
    after = next;
    if (sock.bufferedAmount() > limitBytes) {
      if (!(await drainedBy(sock, deadline)))
        throw new GatewayError(ErrorCode.SlowConsumer, `last values of ${pattern}: the client read too slowly to take them within ${deadlineMs} ms`);
      if (ended() || sock.closed) return { sent, stopped: true };
    }
  }
}

/** Resolves true once the socket drained, false if `deadline` (epoch ms) comes first. */
function drainedBy(sock: FanoutSocket, deadline: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const t = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
    t.unref();
    sock.onDrained(() => {
      clearTimeout(t);
      resolve(true);
    });
  });
}
