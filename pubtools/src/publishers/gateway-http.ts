// Gateway HTTP publish: POST /v1/publish/{channel} with the JSON body → 201 {"seq":N,"duplicate":false}.
import type { PublisherSetup } from "./types.js";
import { PublishError } from "./types.js";
import { itemJson, itemOutcome, type BatchCapable, type BatchEntry } from "./batching.js";

export class GatewayHttpPublisher implements BatchCapable {
  readonly acks = true;
  private readonly base: string;
  private readonly urls = new Map<string, string>();

  constructor(private readonly setup: PublisherSetup) {
    this.base = `http://${setup.host}:${setup.opts.port}/v1/publish/`;
  }

  async connect(): Promise<void> {}

  async publish(channel: string, body: string, msgId: string | undefined): Promise<void> {
    let url = this.urls.get(channel);
    if (!url) {
      url = this.base + encodeURIComponent(channel);
      this.urls.set(channel, url);
    }
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (msgId) headers["idempotency-key"] = msgId; // the gateway's dedup header (it sets Nats-Msg-Id from it)
    const res = await fetch(url, { method: "POST", headers, body, signal: AbortSignal.timeout(this.setup.opts.timeoutMs) });
    if (res.status === 200 || res.status === 201) {
      await res.arrayBuffer();
      return;
    }
    const text = (await res.text().catch(() => "")).slice(0, 200);
    throw new PublishError(`HTTP ${res.status}: ${text}`, `http_${res.status}`);
  }

  /** POST /v1/publish with a JSON array → 200 {"results":[…]} (--batch). */
  async publishBatch(items: readonly BatchEntry[]): Promise<(PublishError | null)[]> {
    const body = `[${items.map((e) => itemJson(e, JSON.stringify(e.channel))).join(",")}]`;
    const res = await fetch(this.base.slice(0, -1), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      signal: AbortSignal.timeout(this.setup.opts.timeoutMs),
    });
    if (res.status !== 200) {
      const text = (await res.text().catch(() => "")).slice(0, 200);
      throw new PublishError(`HTTP ${res.status}: ${text}`, `http_${res.status}`);
    }
    const { results } = (await res.json()) as { results: { error?: string; message?: string }[] };
    return items.map((_, i) => itemOutcome(results[i]));
  }

  async flush(): Promise<void> {}
  async close(): Promise<void> {}
}
