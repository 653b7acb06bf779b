// A gateway subscriber on the lean engine (protocol v1, JSON text frames read as bytes). On close 1001
// (server going away) or any unexpected close it reconnects and resumes each subscription from the last
// stream sequence it delivered.
import type { LeanSocket } from "../lean/connection.js";
import { Opcode } from "../lean/frame-reader.js";
import { bs } from "../scan-bytes.js";
import { GatewaySubscriptions } from "./gateway-subs.js";
import { LeanClient } from "./lean-base.js";
import type { ClientSetup } from "./types.js";

export class GatewayLeanClient extends LeanClient {
  private readonly subs: GatewaySubscriptions;

  constructor(setup: ClientSetup) {
    super(setup, setup.path);
    this.subs = new GatewaySubscriptions(setup.channels, setup.from);
  }

  protected opened(sock: LeanSocket): void {
    for (const f of this.subs.frames()) sock.send(f);
  }

  message(opcode: Opcode, buf: Buffer, s: number, e: number, recvUs: number): void {
    if (opcode !== Opcode.Text) {
      this.setup.rx.badFrames++;
      return;
    }
    const kind = this.setup.rx.gatewayBytes(this.state, buf, s, e, recvUs);
    if (kind === 1) {
      if (bs.subStr !== null) this.subs.seen(bs.subStr, bs.seq);
      else this.subs.seenBytes(buf, bs.subStart, bs.subEnd, bs.seq);
    } else if (kind === 0) {
      const r = this.subs.control(buf.toString("utf8", s, e));
      if (r === "subscribed") this.markSubscribed();
      else if (r === "refused") this.refused(this.subs.refusal);
    }
  }
}
