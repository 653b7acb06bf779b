// Gateway HTTP publish: POST /v1/publish/{channel} with the JSON body → 201 {"seq":N,"duplicate":false}.
import type { Publisher, PublisherSetup } from "./types.js";
import { PublishError } from "./types.js";

export class GatewayHttpPublisher implements Publisher {
  readonly acks = true;
  private readonly base: string;
  private readonly urls = new Map<string, string>();

  constructor(private readonly setup: PublisherSetup) {
    this.base = `http://${setup.host}:${setup.opts.port}/v1/publish/`;
  }

  async connect(): Promise<void> {}

  async publish(channel: string, body: string, msgId: string | undefined): Promise<void> {
    let url = this.urls.get(channel);
    if (!url) { url = this.base + encodeURIComponent(channel); this.urls.set(channel, url); }
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (msgId) headers["nats-msg-id"] = msgId;
    const res = await fetch(url, { method: "POST", headers, body, signal: AbortSignal.timeout(this.setup.opts.timeoutMs) });
    if (res.status === 200 || res.status === 201) { await res.arrayBuffer(); return; }
    const text = (await res.text().catch(() => "")).slice(0, 200);
    throw new PublishError(`HTTP ${res.status}: ${text}`, `http_${res.status}`);
  }

  async flush(): Promise<void> {}
  async close(): Promise<void> {}
}
