// The header fast paths on real messages from a real nats-server: nats.js messages are read from their raw
// bytes (nats.js' private `_rdata` / `_msg.hdr`), and the server's direct-get replies and republished messages
// are in the fixed layout the parser reads value by value. A nats.js or nats-server upgrade that moves either
// would only make replay slower, silently: this test fails instead.
import { connect, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { waitFor } from "#testkit/wait.js";
import { jsHeaderPaths, jsHeaders } from "../src/broker/jetstream/headers.js";
import { DirectGet } from "../src/broker/jetstream/direct/direct-get.js";
import { DirectLink } from "../src/broker/jetstream/direct/direct-link.js";
import { createLogger } from "../src/log.js";

let nats: NatsServerHandle;
let nc: NatsConnection;
const N = 200;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  await (
    await jetstreamManager(nc)
  ).streams.add({
    name: "JSH",
    subjects: ["jsh.>"],
    allow_direct: true,
    republish: { src: "jsh.>", dest: "jshlive.>" },
  });
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

const snapshot = () => ({ ...jsHeaderPaths });
const delta = (before: typeof jsHeaderPaths) => ({
  raw: jsHeaderPaths.raw - before.raw,
  decoded: jsHeaderPaths.decoded - before.decoded,
  fixed: jsHeaderPaths.fixed - before.fixed,
  general: jsHeaderPaths.general - before.general,
});

describe("js headers — fast paths on real messages", () => {
  it("js headers — republished messages and direct-get replies through nats.js are read from raw bytes in the fixed layout; the link's too", async () => {
    const got: Msg[] = [];
    const sub = nc.subscribe("jshlive.>", { callback: (_e, m) => void got.push(m) });
    await nc.flush();
    const js = jetstream(nc);
    for (let i = 0; i < N; i++) await js.publish(`jsh.c${i % 4}`, JSON.stringify({ i }));
    await waitFor(() => got.length >= N, { what: `${N} republished messages` });
    sub.unsubscribe();

    let before = snapshot();
    for (const m of got) expect(jsHeaders(m)?.seq).toBeGreaterThan(0);
    expect(delta(before)).toEqual({ raw: N, decoded: 0, fixed: N, general: 0 });

    // Direct gets on the main (nats.js) connection: N messages and one end-of-batch status (general).
    const plain = new DirectGet(nc, "JSH");
    before = snapshot();
    expect((await plain.batch({ seq: 1, subject: "jsh.>", batch: N + 10 })).messages).toHaveLength(N);
    expect(delta(before)).toMatchObject({ raw: N + 1, decoded: 0, fixed: N, general: 1 });
    plain.close();

    // Direct gets on the link (its own reader, no nats.js message).
    const keep: { link?: DirectLink } = {};
    const linked = new DirectGet(nc, "JSH", {
      fast: (sink) => {
        keep.link = new DirectLink({ server: () => nc.getServer(), name: "jsh-link", sink, log: createLogger("silent", {}) });
        keep.link.start();
        return keep.link;
      },
    });
    await waitFor(() => keep.link?.ready, { what: "link ready" });
    before = snapshot();
    expect((await linked.batch({ seq: 1, subject: "jsh.>", batch: N + 10 })).messages).toHaveLength(N);
    expect(delta(before)).toMatchObject({ raw: 0, decoded: 0, fixed: N, general: 1 });
    linked.close();
  });

  it("js headers — a stored message with headers of its own takes the general loop (the counters tell the paths apart)", async () => {
    const got: Msg[] = [];
    const sub = nc.subscribe("jshlive.own", { callback: (_e, m) => void got.push(m) });
    await nc.flush();
    await jetstream(nc).publish("jsh.own", "x", { msgID: "own-1" });
    await waitFor(() => got.length >= 1, { what: "the republished message" });
    sub.unsubscribe();
    const before = snapshot();
    expect(jsHeaders(got[0]!)?.subject).toBe("jsh.own");
    expect(delta(before)).toEqual({ raw: 1, decoded: 0, fixed: 0, general: 1 });
  });
});
