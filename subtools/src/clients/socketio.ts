// A Socket.IO 4 subscriber on the lean engine, for comparisons with a Socket.IO server (loadtest/peers):
// Engine.IO v4 over WebSocket only, the main namespace, then one `sub` event with an ack per channel. The
// server sends each publication as `42["msg",<payload>]`; Engine.IO pings (`2`) are answered (`3`).
import type { LeanSocket } from "../lean/connection.js";
import { Opcode } from "../lean/frame-reader.js";
import { LeanClient } from "./lean-base.js";
import type { ClientSetup } from "./types.js";

export const SOCKETIO_PATH = "/socket.io/?EIO=4&transport=websocket";

export class SocketIoClient extends LeanClient {
  private pendingAcks = 0;

  constructor(setup: ClientSetup) {
    super(setup, setup.path === "/ws" ? SOCKETIO_PATH : setup.path);
  }

  protected opened(_sock: LeanSocket): void {
    // Nothing yet: the server speaks first (Engine.IO open packet "0{…}").
  }

  message(opcode: Opcode, buf: Buffer, s: number, e: number, recvUs: number): void {
    if (opcode !== Opcode.Text) return;
    if (this.setup.rx.socketIoBytes(this.state, buf, s, e, recvUs) !== 0) return;
    const c0 = buf[s];
    if (c0 === 0x32 /* "2": ping */ && e - s === 1) {
      this.sock?.send("3");
      return;
    }
    const text = buf.toString("utf8", s, e);
    if (text.startsWith("0{")) {
      this.sock?.send("40");
      return;
    }
    if (text.startsWith("40")) {
      this.pendingAcks = this.setup.channels.length;
      this.setup.channels.forEach((ch, i) => this.sock?.send(`42${i + 1}${JSON.stringify(["sub", ch])}`));
      return;
    }
    if (text.startsWith("43") && this.pendingAcks > 0) {
      if (text.includes("false")) {
        this.refused(`socket.io sub refused: ${text}`);
        return;
      }
      if (--this.pendingAcks === 0) this.markSubscribed();
      return;
    }
    if (text.startsWith("44")) this.refused(`socket.io connect error: ${text}`);
  }
}
