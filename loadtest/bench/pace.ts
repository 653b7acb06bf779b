// How the fan-out benches pace a publish rate: in bursts per 10 ms tick, or one message at a time.

/** How a rate is paced: `burst` sends rate/100 messages in one event-loop turn every 10 ms; `even` one at a time, 1000/rate ms apart. */
export type Spacing = "burst" | "even";
export const SPACINGS = ["even", "burst"] as const satisfies readonly Spacing[];

/**
 * Calls `send` `rate` times a second until `stop`. `burst` (below 100 msg/s, one per tick either way) is what
 * the bench did before issue 36: uWS then writes a tick's messages to each socket in one syscall, as if they
 * were coalesced. `even` is a channel fed by independent publishers: each message arrives on its own, so a
 * server that sends one frame per message pays one write per socket per message. Late timers send what is owed.
 * It stops by itself after `forMs`, if `stop` was not called before.
 */
export function pace(rate: number, spacing: Spacing, forMs: number, send: () => void): { stop(): void } {
  const perTick = spacing === "burst" && rate >= 100 ? Math.round(rate / 100) : 1;
  const everyMs = (1000 * perTick) / rate;
  const start = performance.now();
  let sent = 0;
  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    const owed = Math.floor((performance.now() - start) / everyMs) * perTick;
    while (sent < owed) {
      sent++;
      send();
    }
    if (performance.now() - start >= forMs) return;
    timer = setTimeout(tick, Math.max(0, start + (sent / perTick + 1) * everyMs - performance.now()));
  };
  timer = setTimeout(tick, everyMs);
  return { stop: () => clearTimeout(timer) };
}
