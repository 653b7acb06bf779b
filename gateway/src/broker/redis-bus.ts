import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import type { Bus } from "./broker.js";

/**
 * The Bus over Redis pub/sub, on the broker's two connections. A request is one PUBLISH of
 * `<reply channel> <body>`; each subscriber answers with a PUBLISH to that channel, which the asker
 * subscribed to before sending. Pub/sub has no queue groups, so `serve` with a queue is not offered (every
 * worker would take the request): the control plane's doors on Redis are the HTTP ones of the public port.
 */
export class RedisBus implements Bus {
  private readonly handlers = new Map<string, (raw: Buffer) => void>();

  constructor(
    private readonly pub: Redis,
    private readonly sub: Redis,
  ) {}

  /** A message on the subscriber connection: true when it was the bus's (the broker dispatches the rest). */
  deliver(channel: string, raw: Buffer): boolean {
    const h = this.handlers.get(channel);
    if (!h) return false;
    h(raw);
    return true;
  }

  serve(subject: string, answer: (body: Uint8Array) => Promise<Uint8Array>, queue?: string): void {
    if (queue !== undefined) return;
    this.handlers.set(subject, (raw) => {
      const space = raw.indexOf(0x20);
      if (space <= 0) return;
      const reply = raw.subarray(0, space).toString();
      answer(raw.subarray(space + 1)).then(
        (body) => this.pub.publish(reply, Buffer.from(body.buffer, body.byteOffset, body.byteLength)).catch(() => undefined),
        () => undefined,
      );
    });
    void this.sub.subscribe(subject).catch(() => undefined); // resubscribed by ioredis after a reconnect
  }

  scatter(subject: string, body: Uint8Array, onReply: (body: Uint8Array) => void): { stop(): void } {
    const inbox = `fgw.inbox.${randomUUID()}`;
    let stopped = false;
    this.handlers.set(inbox, onReply);
    this.sub
      .subscribe(inbox)
      .then(() => (stopped ? undefined : this.pub.publish(subject, Buffer.concat([Buffer.from(`${inbox} `), body]))))
      .catch(() => undefined); // nobody answers: the gathering ends at its timeout
    return {
      stop: () => {
        stopped = true;
        this.handlers.delete(inbox);
        void this.sub.unsubscribe(inbox).catch(() => undefined);
      },
    };
  }

  request(): Promise<Uint8Array> {
    return Promise.reject(new Error("Redis pub/sub has no queue groups: no single-answer requests"));
  }
}
