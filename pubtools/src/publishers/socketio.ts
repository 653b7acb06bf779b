// Socket.IO 4 publishing (loadtest/peers' Socket.IO server): Engine.IO v4 over WebSocket, the main
// namespace, then `42<id>["pub",channel,payload]` acked by `43<id>[…]`. Engine.IO pings ("2") get "3".
import type WebSocket from "ws";
import { WsAckPublisher } from "./ws-ack.js";
import { PublishError, type PublisherSetup } from "./types.js";

export class SocketIoPublisher extends WsAckPublisher {
  private connected: (() => void) | null = null;

  constructor(setup: PublisherSetup) {
    super(setup, setup.opts.path === "/ws" ? "/socket.io/?EIO=4&transport=websocket" : setup.opts.path);
  }

  protected handshake(): Promise<void> {
    return new Promise((resolve) => {
      this.connected = resolve;
    });
  }

  protected frame(id: number, channel: string, body: string): string {
    return `42${id}["pub",${JSON.stringify(channel)},${body}]`;
  }

  protected onText(ws: WebSocket, text: string): void {
    if (text === "2") {
      ws.send("3");
      return;
    }
    if (text.startsWith("0{")) {
      ws.send("40");
      return;
    }
    if (text.startsWith("40")) {
      this.connected?.();
      this.connected = null;
      return;
    }
    const m = /^43(\d+)(.*)$/s.exec(text);
    if (m) this.settle(Number(m[1]), m[2]!.includes('"error"') ? new PublishError(`refused: ${m[2]}`, "refused") : undefined);
  }
}
