import { type SettingTable, type SliceOf, type ValuesOf, int, section } from "../section-kit.js";
import { parseDuration } from "../parse.js";

const settings = {
  sseHeartbeatMs: {
    env: "SSE_HEARTBEAT",
    shown: "15s",
    doc: "A comment line (`: hb`) is written to idle Server-Sent Events streams this often, so that proxies keep them open",
    default: () => 15_000,
    parse: parseDuration,
    check: int(100, 3_600_000),
  },
  sseRetryMs: {
    env: "SSE_RETRY",
    shown: "1s",
    doc: "Reconnection delay sent to Server-Sent Events clients (`retry:`); the browser's EventSource waits this long before resuming",
    default: () => 1_000,
    parse: parseDuration,
    check: int(0, 600_000),
  },
} satisfies SettingTable;

export type SseValues = ValuesOf<typeof settings>;

export const sse = section({
  name: "sse",
  title: "Server-Sent Events streams (sse/): heartbeat comments and the client's reconnection delay",
  settings,
  slice: { heartbeatMs: "sseHeartbeatMs", retryMs: "sseRetryMs" },
});

export type SseSection = SliceOf<typeof settings, typeof sse.slice>;
