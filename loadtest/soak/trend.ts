// The soak verdict's arithmetic, pure: a least-squares line through one sampled series after warm-up, the
// slope per hour with its 95% confidence interval (standard error of the slope, Student's t), and the rule
// that says whether the series grows: its slope is significantly positive AND the growth the line predicts
// over the measured window is material (above the series' own noise floor, see `Materiality`).

/** One sample: seconds since the run started, and the value. */
export type Point = [t: number, v: number];

export type Fit = {
  n: number;
  /** Slope per hour, and its 95% confidence interval. */
  slopePerHour: number;
  ciLowPerHour: number;
  ciHighPerHour: number;
  /** The fitted line's value at the first and last measured sample, and their difference. */
  fittedStart: number;
  fittedEnd: number;
  growth: number;
  /** Measured window (s). */
  windowS: number;
  min: number;
  max: number;
  mean: number;
};

/** Two-sided 95% Student's t for df degrees of freedom (1.96 beyond the table). */
export function t95(df: number): number {
  const table = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086];
  if (df < 1) return Infinity;
  if (df <= table.length) return table[df - 1]!;
  if (df <= 30) return 2.05;
  if (df <= 60) return 2.01;
  if (df <= 120) return 1.98;
  return 1.96;
}

/** Ordinary least squares of v on t; undefined with fewer than 3 points or no spread in t. */
export function fit(points: readonly Point[]): Fit | undefined {
  const n = points.length;
  if (n < 3) return undefined;
  let st = 0;
  let sv = 0;
  for (const [t, v] of points) {
    st += t;
    sv += v;
  }
  const mt = st / n;
  const mv = sv / n;
  let sxx = 0;
  let sxy = 0;
  for (const [t, v] of points) {
    sxx += (t - mt) ** 2;
    sxy += (t - mt) * (v - mv);
  }
  if (sxx === 0) return undefined;
  const b = sxy / sxx;
  const a = mv - b * mt;
  let sse = 0;
  for (const [t, v] of points) sse += (v - (a + b * t)) ** 2;
  const se = Math.sqrt(sse / (n - 2) / sxx);
  const half = t95(n - 2) * se;
  const t0 = points[0]![0];
  const t1 = points[n - 1]![0];
  const values = points.map((p) => p[1]);
  return {
    n,
    slopePerHour: b * 3600,
    ciLowPerHour: (b - half) * 3600,
    ciHighPerHour: (b + half) * 3600,
    fittedStart: a + b * t0,
    fittedEnd: a + b * t1,
    growth: b * (t1 - t0),
    windowS: t1 - t0,
    min: Math.min(...values),
    max: Math.max(...values),
    mean: mv,
  };
}

/**
 * Growth that counts: at least `abs` (in the series' unit) and at least `rel` of the fitted starting level.
 * RSS moves by tens of MiB as the heap grows and shrinks and the allocator keeps pages: its floor is above that.
 */
export type Materiality = { abs: number; rel: number };

export type Trend = {
  fit?: Fit;
  /** The 95% interval of the slope lies above zero. */
  significant: boolean;
  /** The fitted growth over the window is at least the threshold. */
  material: boolean;
  threshold: number;
  /** Significant and material. */
  grows: boolean;
};

export function trend(points: readonly Point[], m: Materiality): Trend {
  const f = fit(points);
  if (!f) return { significant: false, material: false, threshold: m.abs, grows: false };
  const threshold = Math.max(m.abs, m.rel * Math.abs(f.fittedStart));
  const significant = f.ciLowPerHour > 0;
  const material = f.growth >= threshold;
  return { fit: f, significant, material, threshold, grows: significant && material };
}
