import type { Feed, LateReceiver } from "../fanout/hub.js";
import { fanoutSocket, type Socket, type SubState } from "./session.js";

/**
 * One pattern's live WebSocket subscriptions, for the messages its feed repairs late: the topic cannot carry
 * those, since a socket that joined after a catch-up may have read one from the stream already. Each socket
 * gets a late message only if it is above what its catch-up covered (`SubState.covered`).
 */
export class LateSockets implements LateReceiver {
  readonly subs = new Map<SubState, Socket>();

  constructor(readonly feed: Feed) {}

  onLate(seq: number, frame: Buffer): void {
    for (const [sub, ws] of this.subs) {
      const port = fanoutSocket(ws);
      if (seq > sub.covered && !port.closed) port.send(frame, seq);
    }
  }
}
