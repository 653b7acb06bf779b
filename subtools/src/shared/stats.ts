// Latency statistics: an HDR histogram for percentiles plus exact running figures (count, sum, sum of
// reciprocals, min, max) so MEAN and HARMONIC MEAN never come from histogram buckets.
import * as hdr from "hdr-histogram-js";
import type { Histogram } from "hdr-histogram-js";

/** Histogram range, in whole microseconds: 1 µs to 1 hour at 3 significant digits. */
export const HIST_LOWEST_US = 1;
export const HIST_HIGHEST_US = 3_600_000_000;
export const HIST_DIGITS = 3;

/** What newHistogram replaces on the library's JS histogram (see there). */
type IndexInternals = { subBucketHalfCount: number; computeCountsArrayIndex(bucketIndex: number, subBucketIndex: number): number };

/** A new, empty latency histogram. 64-bit buckets: counts stay exact past 2^31 recordings. */
export function newHistogram(): Histogram {
  const h = hdr.build({
    bitBucketSize: 64,
    autoResize: false,
    lowestDiscernibleValue: HIST_LOWEST_US,
    highestTrackableValue: HIST_HIGHEST_US,
    numberOfSignificantValueDigits: HIST_DIGITS,
  });
  // hdr-histogram-js computes (bucketIndex + 1) × 2^subBucketHalfCountMagnitude with Math.pow on every
  // recorded value, a fifth of the load tools' per-delivery work; 2^magnitude is subBucketHalfCount.
  const x = h as unknown as IndexInternals;
  if (typeof x.subBucketHalfCount === "number" && typeof x.computeCountsArrayIndex === "function") {
    const half = x.subBucketHalfCount;
    x.computeCountsArrayIndex = (bucketIndex, subBucketIndex) => (bucketIndex + 1) * half + subBucketIndex - half;
  }
  return h;
}

/** The serialisable form of {@link LatencyStats}: what goes over IPC and into `--json` files. */
export type LatencySnapshot = {
  count: number;
  sumUs: number;
  /** Σ 1/x over all recorded x (µs); HARMONIC MEAN = count / recipSum. */
  recipSum: number;
  minUs: number | null;
  maxUs: number | null;
  /** Values below 1 µs (e.g. clock skew between hosts) raised to 1 µs. */
  clamped: number;
  /** Values above one hour, recorded in the histogram as one hour (exact figures keep them). */
  overflow: number;
  /** The HDR histogram, compressed and base64-encoded (HdrHistogram's standard encoding). */
  histogram: string;
  /**
   * Instead of `histogram` (the native engine): [value, count, value, count, …], each value the lowest of
   * its HDR bucket (1 µs, 3 significant digits), so it lands in the same bucket here.
   */
  values?: number[];
};

/** Neumaier-compensated running sum: millions of small terms without drift. */
class ExactSum {
  private s = 0;
  private c = 0;
  add(x: number): void {
    const t = this.s + x;
    if (Math.abs(this.s) >= Math.abs(x)) this.c += this.s - t + x;
    else this.c += x - t + this.s;
    this.s = t;
  }
  get value(): number {
    return this.s + this.c;
  }
  reset(): void {
    this.s = 0;
    this.c = 0;
  }
}

/** Latencies in microseconds. `record` is the per-message hot path: no allocation. */
export class LatencyStats {
  readonly histogram: Histogram = newHistogram();
  count = 0;
  min = Infinity;
  max = -Infinity;
  clamped = 0;
  overflow = 0;
  private readonly sum = new ExactSum();
  private readonly recip = new ExactSum();

  record(us: number): void {
    if (!(us >= HIST_LOWEST_US)) {
      us = HIST_LOWEST_US;
      this.clamped++;
    }
    this.count++;
    this.sum.add(us);
    this.recip.add(1 / us);
    if (us < this.min) this.min = us;
    if (us > this.max) this.max = us;
    let v = Math.round(us);
    if (v > HIST_HIGHEST_US) {
      v = HIST_HIGHEST_US;
      this.overflow++;
    }
    this.histogram.recordValue(v);
  }

  get sumUs(): number {
    return this.sum.value;
  }
  get recipSum(): number {
    return this.recip.value;
  }
  get meanUs(): number {
    return this.count ? this.sum.value / this.count : NaN;
  }
  get harmonicMeanUs(): number {
    return this.count ? this.count / this.recip.value : NaN;
  }
  /**
   * Value at percentile `p` (0–100), to the histogram's 3 significant digits. HDR reports the top of a
   * bucket, so the result is kept within the exact [min, max].
   */
  percentileUs(p: number): number {
    if (!this.count) return NaN;
    return Math.min(this.max, Math.max(this.min, this.histogram.getValueAtPercentile(p)));
  }

  /** Adds another set exactly: histograms added, counts and sums added, min/max combined. */
  add(o: LatencyStats): void {
    if (o.count === 0) return;
    this.histogram.add(o.histogram);
    this.count += o.count;
    this.sum.add(o.sumUs);
    this.recip.add(o.recipSum);
    this.clamped += o.clamped;
    this.overflow += o.overflow;
    if (o.min < this.min) this.min = o.min;
    if (o.max > this.max) this.max = o.max;
  }

  reset(): void {
    this.histogram.reset();
    this.count = 0;
    this.sum.reset();
    this.recip.reset();
    this.min = Infinity;
    this.max = -Infinity;
    this.clamped = 0;
    this.overflow = 0;
  }

  toJSON(): LatencySnapshot {
    return {
      count: this.count,
      sumUs: this.sumUs,
      recipSum: this.recipSum,
      minUs: this.count ? this.min : null,
      maxUs: this.count ? this.max : null,
      clamped: this.clamped,
      overflow: this.overflow,
      histogram: this.count ? hdr.encodeIntoCompressedBase64(this.histogram) : "",
    };
  }

  static fromJSON(s: LatencySnapshot): LatencyStats {
    const st = new LatencyStats();
    if (s.count === 0) return st;
    if (s.values) {
      for (let i = 0; i + 1 < s.values.length; i += 2)
        st.histogram.recordValueWithCount(Math.min(HIST_HIGHEST_US, Math.max(HIST_LOWEST_US, s.values[i]!)), s.values[i + 1]!);
    } else st.histogram.add(hdr.decodeFromCompressedBase64(s.histogram, 64));
    st.count = s.count;
    st.sum.add(s.sumUs);
    st.recip.add(s.recipSum);
    st.min = s.minUs ?? Infinity;
    st.max = s.maxUs ?? -Infinity;
    st.clamped = s.clamped;
    st.overflow = s.overflow;
    return st;
  }
}

/** Current time in microseconds since the epoch, as pub-cluster stamps `t`. */
export function nowUs(): number {
  return performance.timeOrigin * 1000 + performance.now() * 1000;
}
