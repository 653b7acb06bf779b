import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { PresenceMember, PresenceRecord } from "../../src/broker/broker.js";
import { clientOfKey, encodeChannel, memberKey } from "../../src/broker/jetstream/presence-keys.js";
import { decodeToken, encodeToken } from "../../src/util/key-tokens.js";
import { presenceEvent } from "../../src/presence/hub.js";
import { jsonFrame } from "../../src/protocol/serialize.js";

const presenceEventFrame = (channel: string, c: Parameters<typeof presenceEvent>[1]): string => jsonFrame(presenceEvent(channel, c));
import { PresenceView } from "../../src/presence/view.js";
import { checkChannel } from "../../src/protocol/channel.js";
import { parseClientFrame } from "../../src/protocol/frames.js";

const KV_KEY = /^[-/_=.a-zA-Z0-9]+$/;
const token = fc.string({ minLength: 1, maxLength: 12, unit: "grapheme" }).filter((t) => checkChannel(t).ok);

describe("presence — keys", () => {
  it("encodes any channel token into KV key characters, reversibly, keeping tokens apart", () => {
    fc.assert(
      fc.property(token, (t) => {
        const e = encodeToken(t);
        expect(e).toMatch(KV_KEY);
        expect(e).not.toContain(".");
        expect(decodeToken(e)).toBe(t);
      }),
      { numRuns: 2_000 },
    );
  });
  it("keeps plain tokens as they are; a member key is the encoded channel and the client id", () => {
    expect(encodeChannel("orders.eu")).toBe("orders.eu");
    expect(encodeChannel("café=1.x/y")).toBe("caf=C3=A9=3D1.x=2Fy");
    expect(memberKey("orders.eu", "abc_-1")).toBe("orders.eu.abc_-1");
    expect(clientOfKey("$KV.PRESENCE.orders.eu.abc_-1")).toBe("abc_-1");
  });
  it("distinct channels never share keys", () => {
    fc.assert(
      fc.property(fc.array(token, { minLength: 1, maxLength: 3 }), fc.array(token, { minLength: 1, maxLength: 3 }), (a, b) => {
        const [x, y] = [a.join("."), b.join(".")];
        if (x !== y) expect(encodeChannel(x)).not.toBe(encodeChannel(y));
      }),
    );
  });
});

const member = (client: string, joinedAt = 1): PresenceMember => ({ client, user: `u-${client}`, joinedAt });
const put = (client: string, seq: number): PresenceRecord => ({ client, seq, member: member(client, seq) });
const removal = (client: string, seq: number): PresenceRecord => ({ client, seq, member: null });

describe("presence — view", () => {
  it("a put is a join once, refreshes are nothing, a removal is a leave once; removals of unknown members are nothing", () => {
    const v = new PresenceView();
    expect(v.apply(put("a", 1))).toEqual({ type: "join", member: member("a", 1) });
    expect(v.apply(put("a", 2))).toBeUndefined();
    expect(v.apply(removal("b", 3))).toBeUndefined();
    expect(v.apply(removal("a", 4))).toEqual({ type: "leave", member: member("a", 2) });
    expect(v.apply(removal("a", 5))).toBeUndefined();
    expect(v.size).toBe(0);
  });
  it("sync: records held during a snapshot win over older snapshot entries, lose to newer ones; only differences are announced", () => {
    const v = new PresenceView();
    v.apply(put("gone", 1));
    v.apply(put("stays", 2));
    v.beginSync();
    expect(v.apply(removal("x", 10))).toBeUndefined(); // held
    v.apply(put("late", 12));
    v.apply(put("old", 5)); // older than the snapshot's record of "old"
    const changes = v.endSync([put("stays", 2), put("x", 8), put("old", 9), removal("y", 3), put("new", 7)]);
    expect(changes.map((c) => `${c.type}:${c.member.client}`).sort()).toEqual(["join:late", "join:new", "join:old", "leave:gone"]);
    expect(v.list(10).map((m) => m.client)).toEqual(["stays", "new", "old", "late"]);
    expect(v.syncing).toBe(false);
  });
  it("the first snapshot announces nothing to nobody but joins, and a failed one applies the held records", () => {
    const v = new PresenceView();
    v.beginSync();
    v.apply(put("a", 3));
    v.apply(removal("a", 4));
    v.apply(put("b", 5));
    expect(v.abortSync().map((c) => `${c.type}:${c.member.client}`)).toEqual(["join:a", "leave:a", "join:b"]);
  });
  it("lists at most the limit, oldest join first", () => {
    const v = new PresenceView();
    for (let i = 5; i > 0; i--) v.apply(put(`c${i}`, i));
    expect(v.list(3).map((m) => m.client)).toEqual(["c1", "c2", "c3"]);
  });
  it("property: after any interleaving, a view equals the bucket's last record per key", () => {
    const op = fc.record({ client: fc.constantFrom("a", "b", "c", "d"), del: fc.boolean() });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), fc.nat(40), fc.nat(40), (ops, syncAt, snapAt) => {
        const records = ops.map((o, i) => (o.del ? removal(o.client, i + 1) : put(o.client, i + 1)));
        const last = new Map<string, PresenceRecord>();
        const v = new PresenceView();
        let snapshot: PresenceRecord[] | undefined;
        // The bucket is read after the watch started holding records: the snapshot is at least that new.
        records.forEach((r, i) => {
          if (i === syncAt) v.beginSync();
          if (i === Math.max(syncAt, snapAt)) snapshot = [...last.values()];
          last.set(r.client, r);
          v.apply(r);
        });
        if (v.syncing) v.endSync(snapshot ?? [...last.values()]);
        const expected = [...last.values()].filter((r) => r.member).map((r) => r.client);
        expect(
          v
            .list(100)
            .map((m) => m.client)
            .sort(),
        ).toEqual(expected.sort());
      }),
      { numRuns: 500 },
    );
  });
});

describe("presence — frames", () => {
  it("parses presence:true with info, the presence op, and refuses what does not fit", () => {
    expect(parseClientFrame('{"op":"sub","id":1,"channel":"a.b","presence":true,"info":{"n":1}}')).toEqual({
      ok: true,
      frame: { op: "sub", id: 1, channel: "a.b", presence: true, info: { n: 1 } },
    });
    expect(parseClientFrame('{"op":"presence","id":2,"channel":"a.b"}')).toEqual({ ok: true, frame: { op: "presence", id: 2, channel: "a.b" } });
    expect(parseClientFrame('{"op":"sub","channel":"a.b","presence":false}')).toEqual({ ok: true, frame: { op: "sub", channel: "a.b" } });
    expect(parseClientFrame('{"op":"sub","channel":"a.b","presence":"member","info":1}')).toMatchObject({ ok: true, frame: { presence: "member", info: 1 } });
    expect(parseClientFrame('{"op":"sub","channel":"a.b","presence":"watch"}')).toMatchObject({ ok: true, frame: { presence: "watch" } });
    for (const bad of [
      '{"op":"sub","channel":"a.*","presence":true}',
      '{"op":"sub","channel":"a.b","presence":1}',
      '{"op":"sub","channel":"a.b","presence":"both"}',
      '{"op":"sub","channel":"a.b","presence":"watch","info":{}}',
      '{"op":"sub","channel":"a.b","info":1}',
      '{"op":"sub","channel":"a.b","presence":true,"durable":"d","ack":true}',
    ])
      expect(parseClientFrame(bad)).toMatchObject({ ok: false, code: "bad_request" });
    expect(parseClientFrame('{"op":"presence","channel":"a.>"}')).toMatchObject({ ok: false, code: "bad_channel" });
  });
  it("join and leave frames", () => {
    expect(JSON.parse(presenceEventFrame("a.b", { type: "join", member: { client: "c", user: null, info: { x: 1 }, joinedAt: 5 } }))).toEqual({
      op: "join",
      channel: "a.b",
      client: "c",
      user: null,
      info: { x: 1 },
    });
    expect(presenceEventFrame("a", { type: "leave", member: { client: "c", user: "bob", joinedAt: 5 } })).toBe(
      '{"op":"leave","channel":"a","client":"c","user":"bob"}',
    );
  });
});
