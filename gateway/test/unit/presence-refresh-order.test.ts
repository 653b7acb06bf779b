import type { NatsConnection } from "@nats-io/transport-node";
import type { JetStreamClient } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { JetStreamPresence } from "../../src/broker/jetstream/presence.js";
import type { PresenceMember } from "../../src/broker/broker.js";

// The order of writes on the worker's connection, with the first refresh's ack held: a member removed while
// it is awaited must not be written again after its removal (its watchers saw it join again, once in CI).
function recorder() {
  const writes: string[] = [];
  let hold: (() => void) | undefined;
  const nc = {
    subscribe: () => ({ unsubscribe: () => undefined }),
    publish: (subject: string) => void writes.push(`refresh ${subject.split(".").at(-1)}`),
    flush: async () => undefined,
    isClosed: () => false,
  };
  const js = {
    publish: (subject: string, data: string | Uint8Array) => {
      const kind = typeof data === "string" ? "put" : "remove";
      writes.push(`${kind} ${subject.split(".").at(-1)}`);
      if (kind === "put" && hold === undefined) return new Promise((r) => (hold = () => r({ seq: 1, stream: "KV_p", duplicate: false })));
      return Promise.resolve({ seq: 2, stream: "KV_p", duplicate: false });
    },
  };
  const presence = new JetStreamPresence(nc as unknown as NatsConnection, js as unknown as JetStreamClient, {
    bucket: "p",
    ttlMs: 30_000,
    replicas: 1,
    storage: "memory",
  });
  return { writes, presence, release: () => hold?.() };
}

const member = (client: string): PresenceMember => ({ client, user: null, joinedAt: 1 });

describe("presence — refresh order", () => {
  it("presence — every entry of a refresh round is written before its first ack is awaited: a removal meanwhile comes after, never before, the member's refresh", async () => {
    const { writes, presence, release } = recorder();
    const round = presence.refresh([
      { channel: "room", member: member("aaaa") },
      { channel: "room", member: member("bbbb") },
    ]);
    await presence.remove("room", "bbbb");
    release();
    await round;
    const key = (c: string) => writes.filter((w) => w.endsWith(c));
    expect(key("bbbb")).toEqual(["refresh bbbb", "remove bbbb"]);
    expect(writes[0]).toBe("put aaaa");
  });
});
