import { wireError, type GatewayError } from "./errors.js";
import { clearTimer, hostAbortController, hostFetch, setTimer } from "./platform.js";

/**
 * Why the gateway refused a request that an API cannot show the answer of (an EventSource, a WebSocket
 * upgrade): the same URL asked again with fetch, its JSON error `{error, message, temporary}` as a
 * `GatewayError`. Undefined when it cannot tell: no fetch in this host, no answer within `timeoutMs`, an
 * answer that is no error (2xx, or 426: a WebSocket upgrade would be let in), or not JSON (a proxy's page).
 */
export async function refusal(url: string, options: { headers?: Record<string, string>; timeoutMs?: number } = {}): Promise<GatewayError | undefined> {
  const fetch = hostFetch();
  if (typeof fetch !== "function") return undefined;
  const AC = hostAbortController();
  const ac = AC ? new AC() : undefined;
  const timer = ac && options.timeoutMs !== undefined ? setTimer(() => ac.abort(), options.timeoutMs) : undefined;
  try {
    const r = await fetch(url, { ...(ac ? { signal: ac.signal } : {}), ...(options.headers ? { headers: options.headers } : {}) });
    if (r.status < 400 || r.status === 426) return undefined;
    const body = (await r.json()) as { error?: unknown; message?: unknown; temporary?: unknown };
    return wireError({ op: "err", code: body.error ?? `http_${r.status}`, message: body.message, temporary: body.temporary });
  } catch {
    return undefined;
  } finally {
    clearTimer(timer);
    ac?.abort();
  }
}
