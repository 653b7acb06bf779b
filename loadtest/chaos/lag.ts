// Event-loop lag of every gateway worker during a chaos run, scraped from each instance's /metrics
// (`fanout_worker_state{what="event_loop_lag_max_ms"}`: the worst lag since the previous scrape), so that a
// client's long wait can be told apart from a worker that was not running. A scrape that gets no answer
// in time is kept too (null): a stalled worker holds up its instance's aggregated metrics.
export type LagSample = { t: number; url: string; maxLagMs: number | null };

/** The largest `event_loop_lag_max_ms` of any worker in a Prometheus text exposition (null: none listed). */
export function maxLagOf(text: string): number | null {
  let max: number | null = null;
  for (const line of text.split("\n")) {
    if (!line.startsWith("fanout_worker_state{") || !line.includes('what="event_loop_lag_max_ms"')) continue;
    const v = Number(line.slice(line.lastIndexOf(" ") + 1));
    if (Number.isFinite(v)) max = Math.max(max ?? 0, v);
  }
  return max;
}

/** Scrapes every URL each `everyMs` until stopped; bounded by the caller's stop(). */
export function sampleLag(urls: readonly string[], everyMs: number): { samples: LagSample[]; stop(): void } {
  const samples: LagSample[] = [];
  let stopped = false;
  const once = async (url: string) => {
    const t = Date.now();
    const maxLagMs = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(everyMs) })
      .then(async (r) => (r.ok ? maxLagOf(await r.text()) : null))
      .catch(() => null);
    samples.push({ t, url, maxLagMs });
  };
  const timer = setInterval(() => {
    if (!stopped) for (const u of urls) void once(u);
  }, everyMs);
  timer.unref();
  return {
    samples,
    stop: () => {
      stopped = true;
      clearInterval(timer);
    },
  };
}

/**
 * For each silent SSE stream (a `silent: <url>, …` down event), the worst lag its instance reported in the
 * `windowMs` before, and whether that instance failed to answer a scrape then.
 */
export function lagAtSilences(events: readonly { t: number; up: boolean; why?: string }[], samples: readonly LagSample[], windowMs = 8_000) {
  const out: { t: number; url: string; maxLagMs: number | null; unanswered: number }[] = [];
  for (const e of events) {
    if (e.up || !e.why?.startsWith("silent: ")) continue;
    const url = e.why.slice(8).split("/v1/")[0] ?? "";
    const near = samples.filter((s) => s.url === url && s.t <= e.t && s.t >= e.t - windowMs);
    const lags = near.map((s) => s.maxLagMs).filter((x): x is number => x !== null);
    out.push({ t: e.t, url, maxLagMs: lags.length ? Math.max(...lags) : null, unanswered: near.length - lags.length });
  }
  return out;
}

/**
 * What was acting on each silent stream's instance (`urls[i]` is instance `gw<i>`) in the `windowMs` before
 * it fell silent: the faults whose target names it (for a fault made of steps, the step on that instance),
 * counted by kind over all silences ("none" when nothing was), so that a silence can be tied to a restart, a
 * kill or a cut link.
 */
export function faultsAtSilences(
  silences: readonly { t: number; url: string }[],
  faults: readonly {
    kind: string;
    target: string;
    startedAt: number;
    endedAt: number;
    steps?: readonly { target: string; startedAt: number; endedAt: number }[];
  }[],
  urls: readonly string[],
  windowMs = 8_000,
): Record<string, number> {
  const out: Record<string, number> = {};
  const near = (x: { startedAt: number; endedAt: number }, t: number) => x.startedAt <= t && x.endedAt >= t - windowMs;
  const names = (target: string, gw: string) => target.split(/[ ,]/).includes(gw);
  for (const s of silences) {
    const gw = `gw${urls.indexOf(s.url)}`;
    // A fault made of steps (a rolling restart) acts on an instance only during that instance's step.
    const hits = (f: (typeof faults)[number]) => (f.steps ? f.steps.some((st) => names(st.target, gw) && near(st, s.t)) : names(f.target, gw) && near(f, s.t));
    const kinds = new Set(faults.filter(hits).map((f) => f.kind));
    if (kinds.size === 0) kinds.add("none");
    for (const k of kinds) out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

/**
 * The TCP states seen at silent streams (clients.ts takes an `ss` snapshot before giving a stream up),
 * counted by "client <states> / server <states>" ("none" where no socket was left). A client end in
 * CLOSE-WAIT means the gateway closed and the reader never noticed; ESTAB on both ends means the gateway
 * kept the connection and wrote nothing.
 */
export function socketStatesAtSilences(events: readonly { why?: string; sockets?: { client: string[]; server: string[] } | { error: string } }[]) {
  const out: Record<string, number> = {};
  const states = (rows: readonly string[]) => [...new Set(rows.map((r) => r.split(" ")[0]))].sort().join("+") || "none";
  for (const e of events) {
    if (!e.why?.startsWith("silent: ") || !e.sockets) continue;
    const key = "error" in e.sockets ? "ss failed" : `client ${states(e.sockets.client)} / server ${states(e.sockets.server)}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}
