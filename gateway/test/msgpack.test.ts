// fanout.v1.msgpack against a real gateway and nats-server: every frame binary both ways, the same ops and
// answers as fanout.v1, messages with their stored payload as bytes; JSON sockets on the same channels get
// what they always got.
import { encode } from "@msgpack/msgpack";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { waitFor } from "#testkit/wait.js";
import { httpPublish, type Frame, type TestClient } from "#testkit/ws-client.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
const clients = new ClientPool(() => gw.wsUrl);
const uniq = uniqueNames();
const binary = () => clients.open({ msgpack: true });
const text = (b: unknown) => Buffer.from(b as Uint8Array).toString("utf8");

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 1, args: ["--feed-linger", "100ms"] });
});
afterAll(async () => {
  clients.closeAll();
  await gw?.stop();
  await nats?.stop();
});

/** Every frame the client got was binary, and it negotiated the MessagePack subprotocol. */
function allBinary(c: TestClient): void {
  expect(c.ws.protocol).toBe("fanout.v1.msgpack");
  expect(c.textFrames).toBe(0);
}

describe("msgpack — fanout.v1.msgpack on a real gateway", () => {
  it("msgpack — subscribe and live delivery in binary frames beside a JSON socket on the same channel", async () => {
    const ch = uniq("mp.live.");
    const b = await binary();
    const j = await clients.open();
    expect(j.ws.protocol).toBe("");
    const ok = await b.sub(ch);
    expect(ok).toMatchObject({ op: "ok" });
    expect(typeof ok.epoch).toBe("string");
    await j.sub(ch);
    await httpPublish(gw.url, ch, { n: 1, s: "é" });
    const [m] = await b.waitForMsgs(1);
    expect(m).toMatchObject({ op: "msg", channel: ch, sub: ch });
    expect(m!.data).toBeInstanceOf(Uint8Array);
    expect(JSON.parse(text(m!.data))).toEqual({ n: 1, s: "é" });
    expect(m).not.toHaveProperty("enc");
    const [jm] = await j.waitForMsgs(1);
    expect(jm).toMatchObject({ op: "msg", channel: ch, seq: m!.seq, ts: m!.ts, data: { n: 1, s: "é" } });
    expect(await b.request({ op: "ping" })).toMatchObject({ op: "pong" });
    allBinary(b);
  });

  it("msgpack — resume: a catch-up from a seq, its live frame, then live; last values of a pattern", async () => {
    const ch = uniq("mp.resume.");
    const seqs: number[] = [];
    for (let i = 1; i <= 5; i++) seqs.push((await httpPublish(gw.url, `${ch}.k${i % 2}`, { i })).body.seq as number);
    const b = await binary();
    await b.sub(`${ch}.*`, { from: { seq: seqs[1] } });
    await b.waitForMsgs(4);
    await waitFor(() => b.frames.find((f) => f.op === "live"), { what: "live frame" });
    expect(b.frames.find((f) => f.op === "live")).toMatchObject({ sub: `${ch}.*`, seq: seqs[4] });
    await httpPublish(gw.url, `${ch}.k1`, { i: 6 });
    const got = await b.waitForMsgs(5);
    expect(got.map((m) => JSON.parse(text(m.data)).i)).toEqual([2, 3, 4, 5, 6]);
    const last = await binary();
    await last.sub(`${ch}.*`, { from: "last_per_subject" });
    const lv = await last.waitForMsgs(2);
    // k1 had 1, 3, 5 and 6; k0 had 2 and 4.
    expect(lv.map((m) => JSON.parse(text(m.data)).i).sort()).toEqual([4, 6]);
    allBinary(b);
    allBinary(last);
  });

  it("msgpack — publish single and batch; the stored message is JSON for every subscriber", async () => {
    const ch = uniq("mp.pub.");
    const b = await binary();
    const j = await clients.open();
    await j.sub(ch);
    const r = await b.request({ op: "pub", channel: ch, data: { a: [1, 2.5, "x", null, true] }, msgId: uniq("m") });
    expect(r).toMatchObject({ op: "ok", duplicate: false });
    expect(typeof r.seq).toBe("number");
    const batch = await b.request({
      op: "pub",
      batch: [
        { channel: ch, data: 1 },
        { channel: "bad channel", data: 2 },
      ],
    });
    expect(batch.op).toBe("ok");
    expect((batch.results as unknown[])[0]).toMatchObject({ duplicate: false });
    expect((batch.results as { error?: string }[])[1]?.error).toBe("bad_channel");
    const got = await j.waitForMsgs(2);
    expect(got.map((m) => m.data)).toEqual([{ a: [1, 2.5, "x", null, true] }, 1]);
    allBinary(b);
  });

  it("msgpack — presence: join frames and the member list in binary", async () => {
    const ch = uniq("mp.presence.");
    const w = await binary();
    const okW = await w.sub(ch, { presence: true, info: { name: "w" } });
    const m = await binary();
    const okM = await m.sub(ch, { presence: true });
    const join = await waitFor(() => w.frames.find((f) => f.op === "join" && f.client === okM.client), { what: "join of the second member" });
    expect(join).toMatchObject({ channel: ch, user: null });
    const list = await m.request({ op: "presence", channel: ch });
    expect(list).toMatchObject({ op: "presence", channel: ch, truncated: false });
    expect((list.members as { client: string }[]).map((x) => x.client).sort()).toEqual([okW.client, okM.client].sort());
    expect((list.members as { client: string; info?: unknown }[]).find((x) => x.client === okW.client)?.info).toEqual({ name: "w" });
    allBinary(w);
    allBinary(m);
  });

  it("msgpack — errors: text frames, undecodable bytes, bad fields and values JSON cannot store are err frames, in binary", async () => {
    const b = await binary();
    const errs = (): Frame[] => b.frames.filter((f) => f.op === "err");
    b.sendRaw('{"op":"ping"}');
    await waitFor(() => errs().length >= 1, { what: "err for a text frame" });
    expect(errs()[0]).toMatchObject({ code: "bad_json", temporary: false });
    b.sendRaw(Buffer.from([0xc1]));
    await waitFor(() => errs().length >= 2, { what: "err for bytes that are not MessagePack" });
    expect(errs()[1]).toMatchObject({ code: "bad_json" });
    b.sendRaw(Buffer.from(encode([1, 2])));
    await waitFor(() => errs().length >= 3, { what: "err for a frame that is not a map" });
    expect(errs()[2]).toMatchObject({ code: "bad_json" });
    expect(await b.request({ op: "sub", channel: "a..b" })).toMatchObject({ op: "err", code: "bad_channel" });
    expect(await b.request({ op: "nope" })).toMatchObject({ op: "err", code: "unknown_op" });
    const bytes = await b.request({ op: "pub", channel: uniq("mp.err."), data: { b: new Uint8Array([1, 2]) } });
    expect(bytes).toMatchObject({ op: "err", code: "bad_request" });
    expect(String(bytes.message)).toContain("not JSON");
    const inf = await b.request({ op: "pub", channel: uniq("mp.err."), data: { x: Infinity } });
    expect(inf).toMatchObject({ op: "err", code: "bad_request" });
    expect(await b.request({ op: "unsub", channel: "never.subscribed" })).toMatchObject({ op: "err", code: "not_subscribed" });
    expect(b.open).toBe(true);
    allBinary(b);
  });

  it("msgpack — a JSON connection still refuses binary frames with bad_json", async () => {
    const j = await clients.open();
    j.sendRaw(Buffer.from(encode({ op: "ping" })));
    const e = await waitFor(() => j.frames.find((f) => f.op === "err"), { what: "err" });
    expect(e).toMatchObject({ code: "bad_json", message: "frames must be UTF-8 JSON text, not binary" });
  });
});
