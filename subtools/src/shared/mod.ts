// What sub-cluster and pub-cluster share, and the one entry pub-cluster (and the benchmarks in loadtest/)
// import it through: latency statistics (exact figures + HDR histogram), the tool's own CPU meter, clock
// offsets across hosts, the benchmark payload both sides agree on, and how latencies are printed.
// Nothing else of subtools/src is for other packages.
export { HIST_DIGITS, HIST_HIGHEST_US, HIST_LOWEST_US, LatencyStats, newHistogram, nowUs, type LatencySnapshot } from "./stats.js";
export { CpuMeter, CpuTrack, SATURATED_PCT, type CpuSummary } from "./cpu.js";
export { estimateOffset, fmtOffset, measureGatewayClock, measureRedisClock, publisherHost, safeHostId, type ClockEstimate, type ClockSample } from "./clock.js";
export { dataPayload, endPayload, safePublisherId } from "./payload.js";
export { ms3, ms6 } from "./format.js";
