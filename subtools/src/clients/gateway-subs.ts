// A gateway client's subscriptions and where each would resume, shared by both engines.
//
// Resume positions are kept per subscription, keyed by the pattern the client subscribed to (the frame's
// `sub`), never by the message's channel: a wildcard subscription resumes from the last stream sequence it
// delivered on any of its channels. (Keyed by channel, a wildcard's position was never found again and its
// reconnect gap was counted as lost.)
import type { FromSpec } from "../options.js";

type Control = { op?: string; id?: unknown; code?: string; message?: string; epoch?: unknown };

export type ControlResult = "subscribed" | "refused" | "other";

export class GatewaySubscriptions {
  /** Highest stream sequence seen per subscription (same order as `patterns`), -1 before the first. */
  readonly lastSeq: number[];
  /** The stream's epoch from the last `ok`, sent back on resume. */
  epoch: string | null = null;
  private readonly patternBytes: Buffer[];
  private pending = 0;
  private nextId = 1;
  /** Message of the last refusal, for the caller's error report. */
  refusal = "";

  constructor(
    readonly patterns: readonly string[],
    private readonly from: FromSpec | null,
  ) {
    this.lastSeq = patterns.map(() => -1);
    this.patternBytes = patterns.map((p) => Buffer.from(p, "utf8"));
  }

  /** The `sub` frames of a (re)connect: resuming subscriptions ask for what they missed. */
  frames(): string[] {
    this.pending = this.patterns.length;
    return this.patterns.map((channel, i) => {
      const last = this.lastSeq[i]!;
      const frame: Record<string, unknown> = { op: "sub", id: this.nextId++, channel };
      if (last >= 0) frame.from = this.epoch !== null ? { seq: last + 1, epoch: this.epoch } : { seq: last + 1 };
      else if (this.from !== null) frame.from = this.from;
      return JSON.stringify(frame);
    });
  }

  /** Notes a delivery whose `sub` is the byte range [s, e) of `buf` (-1 when the frame had none). */
  seenBytes(buf: Buffer, s: number, e: number, seq: number): void {
    if (seq < 0) return;
    let i = 0;
    if (this.patterns.length > 1) {
      if (s < 0) return;
      i = this.patternBytes.findIndex((p) => p.length === e - s && buf.compare(p, 0, p.length, s, e) === 0);
      if (i < 0) return;
    }
    if (seq > this.lastSeq[i]!) this.lastSeq[i] = seq;
  }

  /** Notes a delivery of subscription `sub` (the `ws` engine's string path). */
  seen(sub: string, seq: number): void {
    if (seq < 0) return;
    const i = this.patterns.length === 1 ? 0 : this.patterns.indexOf(sub);
    if (i >= 0 && seq > this.lastSeq[i]!) this.lastSeq[i] = seq;
  }

  /** A control frame: "subscribed" once every `sub` of this connection is acknowledged. */
  control(text: string): ControlResult {
    let f: Control;
    try {
      f = JSON.parse(text) as Control;
    } catch {
      return "other";
    }
    if (f.op === "ok" && this.pending > 0) {
      if (typeof f.epoch === "string") this.epoch = f.epoch;
      return --this.pending === 0 ? "subscribed" : "other";
    }
    if (f.op === "err") {
      this.refusal = `${f.code ?? "error"}: ${f.message ?? ""}`;
      return "refused";
    }
    return "other";
  }
}
