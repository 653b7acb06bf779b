// The delta `msg` frame of PROTOCOL.md's draft "Deltas" section, built here for the SDKs' tests and
// bench:deltas until the server's frame module builds it (then this goes, and they use that one).
import { isUtf8 } from "node:buffer";

export type DeltaFrameFields = { channel: string; sub: string; seq: number; ts: number; base: number };

/** `{"op":"msg",…,"delta":true,"base":B,"data":"<delta>"}`, with `"enc":"base64"` when the delta is not UTF-8 (or `base64` asks for it). */
export function draftDeltaFrame(m: DeltaFrameFields, delta: Uint8Array, base64 = false): string {
  const head = `{"op":"msg","channel":${JSON.stringify(m.channel)},"sub":${JSON.stringify(m.sub)},"seq":${m.seq},"ts":${m.ts},"delta":true,"base":${m.base}`;
  const bytes = Buffer.from(delta.buffer, delta.byteOffset, delta.byteLength);
  if (!base64 && isUtf8(bytes)) return `${head},"data":${JSON.stringify(bytes.toString("utf8"))}}`;
  return `${head},"enc":"base64","data":"${bytes.toString("base64")}"}`;
}
