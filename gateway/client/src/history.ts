import { GatewayError, messageOf, wireError } from "./errors.js";
import { hostFetch, queryString } from "./platform.js";
import { base64Decode } from "./deltas.js";
import type { HistoryMessage, HistoryOptions, HistoryPage } from "./types.js";

/** The gateway's HTTP base URL from its WebSocket or HTTP URL: `ws(s)://host:port/ws` → `http(s)://host:port`. */
export function httpBase(url: string): string {
  return url
    .replace(/^ws(s?):/, "http$1:")
    .replace(/\/ws\/?$/, "")
    .replace(/\/+$/, "");
}

/**
 * One page of a channel's stored messages (PROTOCOL.md `GET /v1/channels/{channel}/messages`), read with
 * `token` as the bearer. A refusal rejects with the server's code (`forbidden`, `rate_limited`…); a failed
 * request with `not_connected`.
 */
export async function readHistory(url: string, channel: string, options: HistoryOptions, token: string | undefined): Promise<HistoryPage> {
  const fetch = hostFetch();
  if (typeof fetch !== "function") throw new GatewayError("no_fetch", "no fetch implementation in this host", { temporary: false });
  const n = (v: number | undefined) => (v === undefined ? undefined : String(v));
  const qs = queryString({
    last: n(options.last),
    from_seq: n(options.fromSeq),
    limit: n(options.limit),
    reverse: options.reverse ? "1" : undefined,
    before_seq: n(options.beforeSeq),
  });
  let status: number;
  let body: Record<string, unknown>;
  try {
    const r = await fetch(`${httpBase(url)}/v1/channels/${encodeURIComponent(channel)}/messages${qs ? `?${qs}` : ""}`, {
      ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
    });
    status = r.status;
    body = (await r.json()) as Record<string, unknown>;
  } catch (e) {
    throw new GatewayError("not_connected", `history read of ${channel} failed: ${messageOf(e)}`, { cause: e, temporary: true });
  }
  if (status !== 200) throw wireError({ code: body.error ?? `http_${status}`, message: body.message, temporary: body.temporary });
  const page = body as HistoryPage;
  return { ...page, messages: page.messages.map(historyMessage) };
}

/** A binary payload (one with a `type`) as bytes, as a live message hands it on. */
function historyMessage(m: HistoryMessage): HistoryMessage {
  if (m.type === undefined || m.enc !== "base64") return m;
  return { ...m, data: base64Decode(String(m.data)), enc: "binary" };
}
