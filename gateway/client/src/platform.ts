/**
 * What the client takes from its host, read from `globalThis` when used: timers, microtasks and (for SSE
 * refusals and history reads) fetch. Typed here so that the package compiles without the DOM or Node type libraries, and runs
 * in browsers, React Native and Node alike.
 */
export type Timer = unknown;

type Host = {
  setTimeout(fn: () => void, ms: number): Timer;
  clearTimeout(t: Timer): void;
  queueMicrotask(fn: () => void): void;
  fetch?: (url: string, init?: { signal?: unknown; headers?: Record<string, string> }) => Promise<{ status: number; json(): Promise<unknown> }>;
  AbortController?: new () => { signal: unknown; abort(): void };
};
const host = (): Host => globalThis as unknown as Host;

export const setTimer = (fn: () => void, ms: number): Timer => host().setTimeout(fn, ms);
export const clearTimer = (t: Timer | undefined): void => {
  if (t !== undefined) host().clearTimeout(t);
};
export const microtask = (fn: () => void): void => host().queueMicrotask(fn);
export const hostFetch = (): Host["fetch"] => host().fetch;
export const hostAbortController = (): Host["AbortController"] => host().AbortController;

/** A query string (`a=1&b=2`) of the defined values, percent-encoded. */
export function queryString(params: Record<string, string | undefined>): string {
  return Object.entries(params)
    .filter((e): e is [string, string] => e[1] !== undefined)
    .map(([k, v]) => `${k}=${encodeURIComponent(v)}`)
    .join("&");
}
