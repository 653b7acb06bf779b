// centrifuge client-protocol publishing (loadtest/peers' server on the centrifuge library): connect, then
// `{"id":N,"publish":{"channel":…,"data":<payload>}}` answered by `{"id":N,"publish":{}}` or an error.
// Replies may come several to a frame, joined by "\n"; pings are "{}" and get "{}".
import type WebSocket from "ws";
import { WsAckPublisher } from "./ws-ack.js";
import { PublishError, type PublisherSetup } from "./types.js";

type Reply = { id?: number; connect?: unknown; error?: { code?: number; message?: string } };

export class CentrifugePublisher extends WsAckPublisher {
  private connected: ((e?: Error) => void) | null = null;
  /** Publish ids count from 1; the connect command takes one they never reach. */
  private static readonly CONNECT_ID = 1_000_000_000;

  constructor(setup: PublisherSetup) {
    super(setup, setup.opts.path === "/ws" ? "/connection/websocket" : setup.opts.path);
  }

  protected handshake(ws: WebSocket): Promise<void> {
    return new Promise((resolve, reject) => {
      this.connected = (e) => (e ? reject(e) : resolve());
      ws.send(`{"id":${CentrifugePublisher.CONNECT_ID},"connect":{"name":"pub-cluster"}}`);
    });
  }

  protected frame(id: number, channel: string, body: string): string {
    return `{"id":${id},"publish":{"channel":${JSON.stringify(channel)},"data":${body}}}`;
  }

  protected onText(ws: WebSocket, text: string): void {
    for (const line of text.split("\n")) {
      if (line === "{}") {
        ws.send("{}");
        continue;
      }
      let r: Reply;
      try {
        r = JSON.parse(line) as Reply;
      } catch {
        continue;
      }
      const err = r.error ? new PublishError(`centrifuge error ${r.error.code ?? "?"}: ${r.error.message ?? ""}`, String(r.error.code ?? "error")) : undefined;
      if (r.id === CentrifugePublisher.CONNECT_ID) {
        this.connected?.(err);
        this.connected = null;
        continue;
      }
      if (typeof r.id === "number") this.settle(r.id, err);
    }
  }
}
