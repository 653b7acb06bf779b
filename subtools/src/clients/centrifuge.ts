// A centrifuge subscriber on the lean engine (client protocol v2, JSON), for comparisons with a server on
// the centrifuge library (loadtest/peers): connect, then one subscribe per channel. The server joins
// replies and pushes into one frame with "\n"; its pings are empty objects, answered with "{}".
import type { LeanSocket } from "../lean/connection.js";
import { Opcode } from "../lean/frame-reader.js";
import { LeanClient } from "./lean-base.js";
import type { ClientSetup } from "./types.js";

export const CENTRIFUGE_PATH = "/connection/websocket";

type Reply = { id?: number; connect?: unknown; subscribe?: unknown; error?: { code?: number; message?: string } };

export class CentrifugeClient extends LeanClient {
  private pendingSubs = 0;
  private nextId = 1;
  private connectId = 0;

  constructor(setup: ClientSetup) {
    super(setup, setup.path === "/ws" ? CENTRIFUGE_PATH : setup.path);
  }

  protected opened(sock: LeanSocket): void {
    this.connectId = this.nextId++;
    sock.send(`{"id":${this.connectId},"connect":{"name":"sub-cluster"}}`);
  }

  message(opcode: Opcode, buf: Buffer, s: number, e: number, recvUs: number): void {
    if (opcode !== Opcode.Text) return;
    this.setup.rx.centrifugeBytes(this.state, buf, s, e, recvUs, this.other);
  }

  private readonly other = (buf: Buffer, s: number, e: number): void => {
    if (e - s === 2 && buf[s] === 0x7b && buf[s + 1] === 0x7d) {
      this.sock?.send("{}");
      return;
    } // ping
    let r: Reply;
    try {
      r = JSON.parse(buf.toString("utf8", s, e)) as Reply;
    } catch {
      this.setup.rx.badFrames++;
      return;
    }
    if (r.error) {
      this.refused(`centrifuge error ${r.error.code ?? "?"}: ${r.error.message ?? ""}`);
      return;
    }
    if (r.id === this.connectId && r.connect !== undefined) {
      this.pendingSubs = this.setup.channels.length;
      for (const channel of this.setup.channels) this.sock?.send(JSON.stringify({ id: this.nextId++, subscribe: { channel } }));
    } else if (r.subscribe !== undefined && this.pendingSubs > 0) {
      if (--this.pendingSubs === 0) this.markSubscribed();
    }
  };
}
