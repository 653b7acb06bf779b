// The direct-get link's handshake against a scripted peer, for what a real nats-server does only now and then:
// a second INFO (a cluster update) before the PONG must not start a second handshake (a second SUB with the
// same sid would deliver every reply twice). The link against real servers is in ../direct-link.test.ts.
import { createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { DirectLink } from "../../src/broker/jetstream/direct/direct-link.js";
import type { ReplySink } from "../../src/broker/jetstream/direct/direct-get.js";
import { createLogger } from "../../src/log.js";
import { waitFor } from "#testkit/wait.js";

let server: Server | undefined;
const peers = new Set<Socket>();
const links = new Set<DirectLink>();
afterEach(async () => {
  for (const l of links) l.close();
  links.clear();
  for (const s of peers) s.destroy();
  peers.clear();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  server = undefined;
});

/** A peer that greets with the given INFO lines and answers PING with PONG; records what the client sent. */
async function scriptedPeer(greeting: string): Promise<{ port: number; received: () => string }> {
  let got = "";
  server = createServer((s) => {
    peers.add(s);
    s.write(greeting);
    s.on("data", (d: Buffer) => {
      got += d.toString();
      if (/PING\r\n$/.test(got)) s.write("PONG\r\n");
    });
    s.on("error", () => undefined);
  });
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  return { port: (server!.address() as { port: number }).port, received: () => got };
}

const sink: ReplySink = { reply: () => undefined, lost: () => undefined };

describe("direct link — handshake", () => {
  it("direct link — a second INFO before the PONG: one CONNECT, one SUB, ready", async () => {
    const info = 'INFO {"server_id":"S","headers":true,"max_payload":1048576}\r\n';
    const peer = await scriptedPeer(info + info);
    const link = new DirectLink({ server: () => `127.0.0.1:${peer.port}`, name: "t", sink, log: createLogger("silent", {}) });
    links.add(link);
    link.start();
    await waitFor(() => link.ready, { what: "link ready" });
    expect(peer.received().match(/CONNECT /g)).toHaveLength(1);
    expect(peer.received().match(/\r\nSUB _INBOX\.[A-Za-z0-9]+\.\* 1\r\n/g)).toHaveLength(1);
    expect(JSON.parse(/CONNECT (\{.*\})\r\n/.exec(peer.received())![1]!)).toMatchObject({
      headers: true,
      no_responders: true,
      echo: false,
      verbose: false,
      name: "t",
    });
    link.close();
    expect(link.state).toBe("closed");
  });

  it("direct link — a server that is not NATS (bytes that are not the protocol) is dropped and tried again", async () => {
    const peer = await scriptedPeer("HTTP/1.1 400 Bad Request\r\n\r\n");
    const link = new DirectLink({ server: () => `127.0.0.1:${peer.port}`, name: "t", sink, log: createLogger("silent", {}), backoffMs: [20, 40] });
    links.add(link);
    link.start();
    // Connected, read the non-NATS line, dropped, and connected again after its backoff.
    await waitFor(() => peers.size >= 2 || undefined, { what: "a second attempt" });
    expect(link.ready).toBe(false);
    expect(link.connects).toBe(0);
    link.close();
  });
});
