import { type JetStreamManager } from "@nats-io/jetstream";
import { GatewayError } from "../../errors.js";
import { ErrorCode } from "../../protocol/codes.js";
import { SharedQuery } from "../../util/shared-query.js";

/** How a stream part of a region other than the home region reads (broker/jetstream/regions.ts has the layout). */
export type RegionReadOptions = {
  /** This region's mirror of the stream (`<stream>-<region>`): it answers the direct gets by the origin's name here. */
  mirror: string;
  /** REGION_RESUME_WAIT: how long a read the mirror cannot answer yet waits for it, in ms. */
  waitMs: number;
};

/** What the region's mirror holds: its last sequence (the origin's numbering) and how far behind the origin it knows it is. */
export type MirrorState = { lastSeq: number; firstSeq: number; lag: number };

/** How often a wait for the mirror looks at it again. */
const POLL_MS = 20;

/**
 * The mirror's side of a region's reads. Direct gets by the origin's name are answered here by the mirror, which
 * copies the origin with a lag: a message the origin holds (its stream state says so, and live feeds start
 * there) may not be in the mirror yet, and a direct get then answers "no message", which a catch-up would take
 * as "nothing stored there" and skip. `reaches(seq)` waits, up to REGION_RESUME_WAIT, for the mirror to hold
 * `seq`; a caller that it fails reads from the origin instead (replay.ts) or refuses for now (`require`).
 */
export class RegionMirror {
  private readonly info: SharedQuery<MirrorState>;

  constructor(
    jsm: JetStreamManager,
    readonly opts: RegionReadOptions,
  ) {
    this.info = new SharedQuery(async () => {
      const si = await jsm.streams.info(opts.mirror);
      return { lastSeq: si.state.last_seq, firstSeq: si.state.first_seq, lag: si.mirror?.lag ?? 0 };
    });
  }

  state(): Promise<MirrorState> {
    return this.info.get();
  }

  /** Whether the mirror holds `seq` within REGION_RESUME_WAIT (at once when it does). */
  async reaches(seq: number): Promise<boolean> {
    const deadline = performance.now() + this.opts.waitMs;
    for (;;) {
      if ((await this.info.get()).lastSeq >= seq) return true;
      if (performance.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  /**
   * Resolves once the mirror holds `seq`, waiting up to REGION_RESUME_WAIT; then fails with a temporary
   * `broker_unavailable`: delivery cannot join this region's live feed (the mirror's republish) before the
   * feed has passed the position, or it would send the messages between them twice.
   */
  async require(seq: number): Promise<void> {
    if (await this.reaches(seq)) return;
    const { lastSeq } = await this.info.get();
    throw new GatewayError(
      ErrorCode.BrokerUnavailable,
      `this region's copy of the stream (${this.opts.mirror}) is at seq ${lastSeq}, behind the position ${seq}, after waiting ${this.opts.waitMs} ms: try again`,
      { temporary: true },
    );
  }
}
