import type { ReplayApi } from "../broker/broker.js";
import { buildFrames } from "../protocol/serialize.js";
import type { FanoutSocket } from "./socket.js";

/** What a last-value read did: `sent` frames, or it stopped because the subscription or socket ended. */
export type LastValuesResult = { sent: number; stopped: boolean; dropped?: boolean };

/**
 * Sends the newest stored message of every channel matching `pattern` as of `upTo` (`from:"last_per_subject"`),
 * page by page in stream order, waiting for the socket to drain when it holds more than `limitBytes`. The
 * caller then catches up from `upTo` + 1 and joins live (the catch-up hand-off), so that nothing between the
 * snapshot and live is lost or sent twice. `ended()` is asked between pages (an unsub, a closed socket).
 */
export async function sendLastValues(
  sock: FanoutSocket,
  replay: Required<Pick<ReplayApi, "lastPerSubject">>,
  pattern: string,
  upTo: number,
  limitBytes: number,
  ended: () => boolean,
): Promise<LastValuesResult> {
  let after = 0;
  let sent = 0;
  for (;;) {
    const page = await replay.lastPerSubject(pattern, upTo, after);
    if (ended() || sock.closed) return { sent, stopped: true };
    const frames = buildFrames(pattern, page.messages);
    let dropped = false;
    sock.cork(() => {
      for (const f of frames) {
        if (sock.send(f) === 2) return void (dropped = true);
        sent++;
      }
    });
    // Over the socket's hard cap: the rest would be lost; the caller ends the subscription.
    if (dropped) return { sent, stopped: true, dropped: true };
    if (!page.more || page.messages.length === 0) return { sent, stopped: false };
    after = page.messages.at(-1)!.seq;
    if (sock.bufferedAmount() > limitBytes) {
      await new Promise<void>((resolve) => sock.onDrained(resolve));
      if (ended() || sock.closed) return { sent, stopped: true };
    }
  }
}
