import type { StreamState } from "../../broker/broker.js";
import { positionAfter } from "../../fanout/resume.js";
import type { SubscribeMode } from "../../protocol/centrifuge/requests.js";
import type { SubscribeCommand } from "./commands.js";

/**
 * Where a subscribe of this door starts: its mode (protocol/centrifuge/requests.ts), the offset its reply names,
 * and the native start (`from`: the first seq wanted, in the stream's epoch) that the resume path takes from
 * there. Offsets are the stream's seqs: increasing per channel, not consecutive.
 */
export type SubscribePlan = { mode: SubscribeMode; offset: number; from?: { seq: number; epoch: string } };

/**
 * The plan of `c` on the stream as it is (`st`; undefined: the broker keeps no history, so every subscribe is
 * live). A recovery in the stream's epoch from a position it still holds (and within the namespace's resume
 * window) recovers: everything after the client's offset follows, however much, through the resume path's
 * catch-up. Any other recovery is answered `recovered: false` and, like a positioned subscribe, continues
 * live after the stream's top: nothing is sent that the client must not take as following its state.
 */
export function planSubscribe(
  c: Pick<SubscribeCommand, "recover" | "offset" | "epoch" | "positioned" | "recoverable">,
  st: StreamState | undefined,
): SubscribePlan {
  if (st === undefined || !(c.recover || c.positioned || c.recoverable)) return { mode: "live", offset: 0 };
  if (c.recover && c.epoch === st.epoch) {
    const p = positionAfter(c.offset, c.epoch, st);
    const beforeWindow = st.resumeFrom !== undefined && p.lastSent < st.resumeFrom - 1;
    if (p.truncated !== true && !beforeWindow) return { mode: "recovered", offset: p.lastSent, from: { seq: p.lastSent + 1, epoch: st.epoch } };
  }
  return { mode: c.recover ? "unrecovered" : "positioned", offset: st.lastSeq, from: { seq: st.lastSeq + 1, epoch: st.epoch } };
}
