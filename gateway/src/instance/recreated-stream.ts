import type { Broker } from "../broker/broker.js";
import type { FanoutHub } from "../fanout/hub.js";
import { CloseCode } from "../protocol/codes.js";
import type { SseEndpoint } from "../sse/endpoint.js";
import type { WsEndpoint } from "../ws/server.js";

/**
 * A recreated stream numbers its messages from 1 again: every position in it is void. Sockets subscribed to
 * one of its patterns are closed with 1012 and resume with their seq and its epoch, which the new stream
 * answers with epochChanged; those of other streams (namespaces) keep going.
 */
export function endOnRecreatedStream(
  broker: Broker,
  hub: FanoutHub,
  doors: {
    ws: Pick<WsEndpoint, "users">;
    sse: SseEndpoint;
    /** The Centrifuge client door (centrifugo/client/): its sockets as /ws's. */
    centrifuge?: Pick<WsEndpoint, "users">;
  },
): void {
  broker.onEvent((e) => {
    if (e.type !== "epoch") return;
    hub.streamRecreated(e.stream);
    const inStream = (pattern: string): boolean => {
      try {
        return (broker.replay?.streamOf?.(pattern).name ?? e.stream) === e.stream;
      } catch {
        return true;
      }
    };
    doors.ws.users.endAll(CloseCode.StreamRecreated, "stream recreated: reconnect and resume", inStream);
    doors.centrifuge?.users.endAll(CloseCode.StreamRecreated, "stream recreated: reconnect and recover", inStream);
    doors.sse.endAll(inStream);
  });
}
